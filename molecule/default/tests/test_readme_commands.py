"""The README's commands that tests/readme_commands.yml marks `run`, run as the README shows them against this
scenario's demo host (its host for -l ct200, its inventory for -i inventory/demo), each checked for the outcome the
README promises. Over the scenario's own SSH path, in the README's order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
INSTANCE = f"specgate-{os.environ['MOLECULE_SCENARIO_NAME']}"
testinfra_hosts = [f"podman://{INSTANCE}"]

sys.path.insert(0, str(PROJECT / "tests"))
import readme_commands as rc  # noqa: E402 - the project's tests/ is put on the path just above

RUN = [e for e in rc.registry() if e.how == "run"]


@pytest.mark.parametrize("entry", RUN, ids=lambda e: e.command)
def test_the_readme_command_does_what_the_readme_says(entry, tmp_path):
    run = rc.run_on_demo(entry, tmp_path, SCENARIO, EPHEMERAL / "inventory", INSTANCE)
    failures = [(e["event_data"].get("task"), e["event_data"]["res"].get("msg"))
                for e in run.events if e["event"] in ("runner_on_failed", "runner_on_unreachable")
                and not e["event_data"].get("ignore_errors")]
    expected = entry.detail
    assert run.status == expected["status"], (run.status, failures)
    if "message" in expected:
        assert any(expected["message"] in (msg or "") for _task, msg in failures), failures
    if "changed" in expected:
        changed = [e["event_data"].get("task") for e in run.events
                   if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")]
        assert len(changed) == expected["changed"], changed
