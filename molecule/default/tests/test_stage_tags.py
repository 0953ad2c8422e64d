"""deploy.yml --tags <stage> on the provisioned host, as a user reruns one stage: each stage alone gets the facts of
the stages before it (read-only tasks tagged always), succeeds and changes nothing on the host. Over the scenario's
own SSH path and settings, with the inventory molecule converged through."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ansible_runner
import pytest
import yaml

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
sys.path.insert(0, str(PROJECT / "scripts"))
from run_changes import host_changes, report_writes  # noqa: E402 - a script module, found through the path above

STAGES = ["preflight", "cuda_toolkit", "sglang_env", "model_weights", "sglang_service", "spec_gate"]


def _extravars() -> dict:
    """The -e JSON the scenario's provisioner passes to every playbook (molecule.yml ansible_args)."""
    args = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["ansible_args"]
    return json.loads(args[args.index("-e") + 1])


@pytest.mark.parametrize("stage", STAGES)
def test_one_stage_alone_runs_with_the_facts_it_needs_and_changes_nothing(stage, tmp_path) -> None:
    run = ansible_runner.run(
        private_data_dir=str(tmp_path),
        project_dir=str(PROJECT),
        playbook=str(PROJECT / "deploy.yml"),
        inventory=str(EPHEMERAL / "inventory"),
        extravars=_extravars(),
        tags=stage,
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")},
        quiet=True,
    )
    failures = [(e["event_data"].get("task"), e["event_data"]["res"].get("msg"))
                for e in run.events if e["event"] in ("runner_on_failed", "runner_on_unreachable")]
    assert run.status == "successful", failures
    # Nothing on the host; the run's own rollout report on the controller says it changed (scripts/run_changes.py).
    assert host_changes(run.events) == []
    assert report_writes(run.events)
    ran = {e["event_data"].get("role") for e in run.events if e["event"] == "runner_on_ok"}
    assert stage in ran, f"no task of {stage} ran under --tags {stage}"
