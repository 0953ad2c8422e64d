"""deploy.yml as users run it: the fleet inventory, the stage order, and a refusal before anything changes.

Driven through ansible-runner; assertions read its events and stats, not scraped text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ansible_runner
import pytest
import yaml

from integration.preflight_runner import fake_nvidia_smi

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["preflight", "cuda_toolkit", "sglang_env", "model_weights", "sglang_service", "spec_gate"]


def _inventory(path: str) -> dict:
    out, err = ansible_runner.get_inventory(
        action="list",
        inventories=[str(ROOT / path)],
        response_format="json",
        quiet=True,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
    )
    assert isinstance(out, dict), err
    return out


def test_fleet_inventory_puts_ct200_and_b300_in_sglang_hosts() -> None:
    inventory = _inventory("inventory/hosts.yml")
    members = set()
    for child in inventory["sglang_hosts"]["children"]:
        members |= set(inventory[child]["hosts"])
    assert members == {"ct200", "b300"}
    hostvars = inventory["_meta"]["hostvars"]
    assert hostvars["ct200"]["sglang_service_attention_backend"] == "triton"  # SM120: no fa3, no trtllm_mla
    assert hostvars["b300"]["sglang_service_attention_backend"] == "trtllm_mla"
    assert hostvars["ct200"]["model_weights_target_repo"] == hostvars["b300"]["model_weights_target_repo"]


def test_demo_inventory_reaches_its_container_through_podman() -> None:
    hostvars = _inventory("inventory/demo/hosts.yml")["_meta"]["hostvars"]["demo"]
    assert hostvars["ansible_connection"] == "containers.podman.podman"
    assert hostvars["sglang_service_launch_module"] == "specgate_sim.launch_server"
    assert hostvars["preflight_expect_gpus"] is False


def test_root_deploy_imports_the_playbook_that_runs_the_six_stages_in_order() -> None:
    root = yaml.safe_load((ROOT / "deploy.yml").read_text())
    assert [p.get("ansible.builtin.import_playbook") for p in root] == ["playbooks/deploy.yml"]
    plays = yaml.safe_load((ROOT / "playbooks" / "deploy.yml").read_text())
    assert [r["role"] for r in plays[0]["roles"]] == STAGES
    service = next(r for r in plays[0]["roles"] if r["role"] == "sglang_service")
    assert service["vars"]["sglang_service_promote_on_success"] is False, "the gate, not the service, promotes"


def test_sweep_provisions_like_deploy_then_sweeps_with_the_same_preflight_feed() -> None:
    deploy = yaml.safe_load((ROOT / "playbooks" / "deploy.yml").read_text())[0]
    sweep = yaml.safe_load((ROOT / "playbooks" / "sweep.yml").read_text())[0]
    assert [r["role"] for r in sweep["roles"]] == [*STAGES[:4], "spec_sweep"]
    assert sweep["vars_files"] == deploy["vars_files"] == ["vars/preflight_feed.yml"]


@pytest.mark.slow
@pytest.mark.parametrize("playbook", ["deploy.yml", "playbooks/sweep.yml"])
def test_deploy_refuses_dflash_with_pipeline_parallelism_before_touching_ct200(tmp_path: Path, playbook: str) -> None:
    """deploy.yml (and sweep.yml) -l ct200 with a bad inventory value stops in preflight, naming the variable."""
    smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    private = tmp_path / "runner"
    private.mkdir()
    run = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(ROOT),
        playbook=str(ROOT / playbook),
        inventory=str(ROOT / "inventory" / "hosts.yml"),
        limit="ct200",
        extravars={
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "preflight_nvidia_smi": str(smi),
            "preflight_min_free_gib": {"/": 0},
            "sglang_service_pp_size": 2,
        },
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
        quiet=True,
    )
    assert run.status == "failed"
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert len(failures) == 1
    assert failures[0]["role"] == "preflight"
    assert "sglang_service_pp_size" in failures[0]["res"]["msg"]
    changed = [
        e["event_data"]["task"]
        for e in run.events
        if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")
    ]
    assert changed == []
    assert run.stats["changed"] == {}
