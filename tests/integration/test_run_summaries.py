"""The end-of-run blocks of deploy.yml, rollback.yml and sweep.yml, rendered by the real task file from the facts
the stages publish (specgate_release, specgate_verdict, specgate_sweep), on localhost through ansible-runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ansible_runner
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = "Summary - what this run left on the host"
RELEASE = {"id": "dflash-bs16-3f1c0a9e27", "label": "dflash-bs16", "active_id": "dflash-bs16-3f1c0a9e27",
           "known_good_id": "dflash-bs16-3f1c0a9e27", "previous_active_id": "dflash-bs8-8d0b6c41a2"}
WINNERS = {"latency": {"meaning": "tok/s at C=1", "metric": "speed_c1_short", "name": "dflash-bs8",
                       "release": "dflash-bs8-8d0b6c41a2", "value": 673.04},
           "throughput": {"meaning": "tok/s at max C", "metric": "tok_s_cmax", "name": "no-spec",
                          "release": "no-spec-1a2b3c4d5e", "value": 2383.0}}
SWEEP = {"id": "demo", "dir": "reports/demo/sweeps/demo", "configs": 3, "ran": 2, "failed": ["crash"],
         "winners": WINNERS, "restored": True, "winner_profiles": ["configs/profiles/dflash-bs8.yml"]}


def _summaries(tmp_path: Path, plays: list[tuple[str, dict]], inventory: str | None = None) -> list[str]:
    """One play per (kind, facts); the summary each printed, in order. ``inventory``: an inventory file of the
    project to run with (localhost is implicit in any), else ansible-runner's own holding localhost."""
    summary_tasks = str(ROOT / "playbooks" / "tasks" / "summary.yml")
    playbook = [{"name": f"summary {i}", "hosts": "localhost", "gather_facts": False, "vars": facts,
                 "tasks": [{"ansible.builtin.import_tasks": summary_tasks, "vars": {"summary_kind": kind}}]}
                for i, (kind, facts) in enumerate(plays)]
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "play.yml").write_text(json.dumps(playbook))
    run = ansible_runner.run(
        private_data_dir=str(tmp_path), playbook="play.yml", quiet=True,
        inventory=inventory or f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        extravars={"ansible_python_interpreter": sys.executable, "ansible_connection": "local"},
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )
    assert run.status == "successful", [e["event_data"]["res"] for e in run.events if e["event"] == "runner_on_failed"]
    return [e["event_data"]["res"]["msg"] for e in run.events
            if e["event"] == "runner_on_ok" and e["event_data"].get("task") == SUMMARY]


def test_each_playbook_ends_with_its_own_block(tmp_path):
    verdict = {"decision": "promote", "phase": "Successful", "message": "", "markdown": "| metric |\n|---|",
               "reports": "reports/localhost/dflash-bs16-3f1c0a9e27"}
    long_context = {"meaning": "tok/s at C=1, long prompts", "metric": "speed_c1_long", "name": "dflash-bs8",
                    "release": "dflash-bs8-8d0b6c41a2", "value": 512.5}
    deploy, rollback, noop_rollback, sweep, long_sweep, stopped_sweep = _summaries(tmp_path, [
        ("deploy", {"specgate_release": RELEASE, "specgate_verdict": verdict, "specgate_switch": {
            "candidate": RELEASE["id"], "active": "dflash-bs8-8d0b6c41a2", "known_good": "dflash-bs8-8d0b6c41a2",
            "switches": True}}),
        ("rollback", {"specgate_release": {**RELEASE, "active_id": "dflash-bs8-8d0b6c41a2",
                                           "previous_active_id": "dflash-bs16-3f1c0a9e27",
                                           "known_good_id": "dflash-bs8-8d0b6c41a2", "label": "dflash-bs8"}}),
        ("rollback", {"specgate_release": {**RELEASE, "previous_active_id": RELEASE["active_id"]}}),
        ("sweep", {"specgate_sweep": SWEEP, "specgate_release": RELEASE}),
        ("sweep", {"specgate_sweep": {**SWEEP, "winners": {**WINNERS, "long_context": long_context}},
                   "specgate_release": RELEASE}),
        ("sweep", {}),
    ])
    assert deploy.startswith("localhost: promoted: dflash-bs16-3f1c0a9e27 passed the gate; it serves and is known-good")
    assert "  switched    yes, from dflash-bs8-8d0b6c41a2" in deploy.splitlines()
    assert "  known-good  dflash-bs16-3f1c0a9e27 (was dflash-bs8-8d0b6c41a2)" in deploy.splitlines()
    # The run's inventory was not ansible.cfg's: every printed command names it, so it works as printed.
    runner_inventory = tmp_path / "inventory" / "hosts"
    assert f"roll back   ansible-playbook playbooks/rollback.yml -i {runner_inventory} -l localhost" in deploy

    assert rollback.splitlines()[:4] == [
        "localhost: rolled back: serving known-good",
        "  serving     dflash-bs8-8d0b6c41a2 (dflash-bs8)",
        "  was         dflash-bs16-3f1c0a9e27",
        "  known-good  dflash-bs8-8d0b6c41a2",
    ]
    assert noop_rollback.startswith("localhost: already on known-good: checked it serves")

    assert sweep.splitlines() == [
        "localhost: sweep demo: 2 of 3 config(s) measured, failed: crash",
        "  latency     dflash-bs8 (speed_c1_short 673.04)",
        "  throughput  no-spec (tok_s_cmax 2383.00)",
        "  serving     dflash-bs16-3f1c0a9e27 (known-good)",
        "  known-good  dflash-bs16-3f1c0a9e27 (unchanged)",
        "  report      reports/demo/sweeps/demo/sweep.md",
        f"  deploy      ansible-playbook deploy.yml -i {runner_inventory} -l localhost "
        "-e @configs/profiles/dflash-bs8.yml",
    ]
    # A use case as long as the label column (long_context, 12 characters) once ran into its winner
    # ("long_contextdflash-bs8"): the column widens to the longest label, the other labels with it.
    assert long_sweep.splitlines() == [
        "localhost: sweep demo: 2 of 3 config(s) measured, failed: crash",
        "  latency       dflash-bs8 (speed_c1_short 673.04)",
        "  throughput    no-spec (tok_s_cmax 2383.00)",
        "  long_context  dflash-bs8 (speed_c1_long 512.50)",
        "  serving       dflash-bs16-3f1c0a9e27 (known-good)",
        "  known-good    dflash-bs16-3f1c0a9e27 (unchanged)",
        "  report        reports/demo/sweeps/demo/sweep.md",
        f"  deploy        ansible-playbook deploy.yml -i {runner_inventory} -l localhost "
        "-e @configs/profiles/dflash-bs8.yml",
    ]
    assert stopped_sweep.startswith("localhost: the sweep did not run")


@pytest.mark.parametrize(
    ("inventory", "said"),
    [("inventory/hosts.yml", "ansible-playbook deploy.yml -l localhost"),  # ansible.cfg's: nothing to add
     ("inventory/demo/hosts.yml", "ansible-playbook deploy.yml -i inventory/demo/hosts.yml -l localhost")],
    ids=["ansible-cfg-inventory", "demo-inventory"],
)
def test_a_printed_command_names_the_inventory_the_run_used(tmp_path, inventory, said):
    """The README's demo runs with -i inventory/demo/hosts.yml: the hint it prints must run as printed (a bare -l demo
    fails: ansible.cfg's inventory has no host demo)."""
    rollback = {**RELEASE, "previous_active_id": "dflash-bs8-8d0b6c41a2"}
    (block,) = _summaries(tmp_path, [("rollback", {"specgate_release": rollback})], inventory=str(ROOT / inventory))
    assert f"  redeploy    {said}" in block.splitlines()
