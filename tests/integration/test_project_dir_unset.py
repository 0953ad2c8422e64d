"""deploy.yml without specgate_project_dir (the project's vars plugin off, as under a user's own ansible.cfg): refused
by the first stage that reads it, before any host changes, naming the variable and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.preflight_runner import run_on_ct200


def test_deploy_without_the_project_dir_is_refused_before_any_change_naming_it(tmp_path: Path) -> None:
    # Only Ansible's own vars plugin: specgate.project.project_dir is not enabled, so nothing sets the variable.
    run = run_on_ct200(tmp_path, {}, envvars={"ANSIBLE_VARS_ENABLED": "ansible.builtin.host_group_vars"})
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert len(failures) == 1, [f.get("task") for f in failures]
    # The first play's plan: its argument specs are checked before any stage's tasks run.
    assert failures[0]["role"] == "fleet_rollout"
    assert failures[0]["task"].startswith("Validating arguments against arg spec 'plan'")
    message = failures[0]["res"]["msg"]
    assert "specgate_project_dir is unset, so the project's reports/fleet cannot be found" in message
    assert "set specgate_project_dir to the specgate checkout" in message
    changed = [e["event_data"]["task"] for e in run.events
               if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")]  # fmt: skip
    assert changed == []


@pytest.mark.slow
def test_the_project_dir_set_in_the_inventory_passes_every_stage_that_reads_it(tmp_path: Path) -> None:
    """Set by the user instead of the plugin: every stage's check passes it, up to the service's refusal of a bad
    setting (pp 2, which needs no hub), which shows the run reached the last stage that reads it."""
    project = Path(__file__).resolve().parents[2]
    run = run_on_ct200(tmp_path, {"specgate_project_dir": str(project), "sglang_service_pp_size": 2},
                       envvars={"ANSIBLE_VARS_ENABLED": "ansible.builtin.host_group_vars"})
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert [f["role"] for f in failures] == ["sglang_service"], [f["res"].get("msg") for f in failures]
    assert "sglang_service_pp_size" in failures[0]["res"]["msg"]
    assert "specgate_project_dir" not in failures[0]["res"]["msg"]
