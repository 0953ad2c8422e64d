"""scripts/run_changes.py tells a run's host changes from its rollout report's writes on the controller, by the task's
file: a task of the same name elsewhere, or a report write that changed nothing, is not taken for one."""

from __future__ import annotations

from script_loader import load_script


def _ok(task: str, path: str, changed: bool) -> dict:
    return {"event": "runner_on_ok", "event_data": {"task": task, "task_path": path, "res": {"changed": changed}}}


REPORT = "/home/u/specgate/roles/fleet_rollout/tasks/report.yml:21"


def test_report_writes_are_told_from_host_changes_by_their_file():
    changes = load_script("run_changes")
    events = [
        _ok("Write fleet.md - the table a person reads", REPORT, True),
        _ok("Write fleet.md - the table a person reads", "/x/roles/other/tasks/report.yml:3", True),  # not ours
        _ok("Make the rollout's report directory", REPORT, False),  # unchanged: neither
        _ok("Render the unit", "/home/u/specgate/roles/sglang_service/tasks/unit.yml:9", True),
        {"event": "runner_on_skipped", "event_data": {"task": "Skipped", "task_path": REPORT, "res": {}}},
        # A line Ansible's own Python printed (cryptography 51's DSA deprecation warning at start): no event_data.
        {"event": "verbose", "stdout": "CryptographyDeprecationWarning: DSA is deprecated"},
    ]
    assert changes.report_writes(events) == ["Write fleet.md - the table a person reads"]
    assert changes.host_changes(events) == ["Write fleet.md - the table a person reads", "Render the unit"]
    assert not changes.is_report_write({"task_path": "/a/fleet_rollout/tasks/report.yml.bak:1"})
