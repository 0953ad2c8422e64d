"""What a playbook run changed, from its ansible-runner events: on the hosts, and the controller's rollout report.

Every deploy.yml run writes its rollout's report on the controller (roles/fleet_rollout/tasks/report.yml: a directory
of its own and two files), and says so: those writes report changed, counted in the recap on the batch's first host
(Ansible counts a delegated task on the host it was delegated from). A re-run that changes no host changes exactly
those. Molecule's idempotence run skips them by their tag (molecule-idempotence-notest); the re-run tests and
scripts/bench_noop_redeploy.py tolerate exactly them through this module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The one file whose tasks write on the controller on every rollout; a task is matched by its path, not its name.
REPORT_TASKS = "roles/fleet_rollout/tasks/report.yml"


def _changed(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e["event_data"] for e in events
            if e.get("event") == "runner_on_ok" and e.get("event_data", {}).get("res", {}).get("changed")]


def is_report_write(event_data: Mapping[str, Any]) -> bool:
    """Whether a task result comes from the rollout report's writes on the controller."""
    path = str(event_data.get("task_path") or "").rsplit(":", 1)[0]
    return path.endswith("/" + REPORT_TASKS)


def host_changes(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tasks that changed something, but the rollout report's writes on the controller."""
    return [data.get("task", "") for data in _changed(events) if not is_report_write(data)]


def report_writes(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rollout report's writes on the controller that changed something (a run that wrote its report has some)."""
    return [data.get("task", "") for data in _changed(events) if is_report_write(data)]
