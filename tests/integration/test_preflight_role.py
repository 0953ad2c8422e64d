"""The preflight role end to end on localhost: facts from (fake) nvidia-smi, refusals that name the variable.

Most bad-input cases are unit tests of deployment_checks; these prove the role wiring: argument_specs
refuse bad types and choices, the check module's refusal reaches the play, and nothing reports a change.
"""

from __future__ import annotations

import pytest

from integration.preflight_runner import fake_nvidia_smi, run_role

pytestmark = pytest.mark.slow

CT200 = {
    "preflight_tp_size": 8,
    "preflight_ep_size": 8,
    "preflight_attention_backend": "triton",
    # the test machine's own filesystem and OS stand in for the GPU box's
    "preflight_min_free_gib": {},
    "preflight_supported_os": [],
}


def refused(run, variable):
    failed = run.failed_tasks()
    assert run.status == "failed", run.status
    assert len(failed) == 1, failed
    task, res = failed[0]
    assert variable in res["msg"], res["msg"]
    assert run.changed_tasks() == []
    return task, res


def test_sm120_pcie_box_passes_and_sets_specgate_gpu(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_nvidia_smi": str(nvidia_smi)})
    assert run.status == "successful", run.failed_tasks()
    gpu = run.fact("specgate_gpu")
    assert (gpu["count"], gpu["arch"], gpu["interconnect"], gpu["cuda_driver_version"]) == (8, "sm120", "pcie", "13.0")
    assert run.changed_tasks() == []


def test_b300_box_reports_nvlink_sm103(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "b300_nvlink")
    run = run_role(
        tmp_path,
        "preflight",
        {**CT200, "preflight_attention_backend": "trtllm_mla", "preflight_nvidia_smi": str(nvidia_smi)},
    )
    assert run.status == "successful", run.failed_tasks()
    assert run.fact("specgate_gpu")["interconnect"] == "nvlink"
    assert run.fact("specgate_gpu")["arch"] == "sm103"


def test_real_h200_capture_is_one_sm90_gpu(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "h200")
    dep = {**CT200, "preflight_tp_size": 1, "preflight_ep_size": 1, "preflight_attention_backend": "fa3"}
    run = run_role(tmp_path, "preflight", {**dep, "preflight_nvidia_smi": str(nvidia_smi)})
    assert run.status == "successful", run.failed_tasks()
    gpu = run.fact("specgate_gpu")
    assert gpu["arch"] == "sm90"
    assert gpu["names"][0].startswith("NVIDIA H200")


def test_fa3_on_sm120_box_fails_in_the_check_naming_the_backend_variable(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    run = run_role(
        tmp_path, "preflight", {**CT200, "preflight_attention_backend": "fa3", "preflight_nvidia_smi": str(nvidia_smi)}
    )
    task, res = refused(run, "preflight_attention_backend")
    assert task.startswith("Check the deployment as a whole")
    assert [p["variable"] for p in res["problems"]] == ["preflight_attention_backend"]


def test_host_without_gpus_is_refused_unless_declared(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, None)
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_nvidia_smi": str(nvidia_smi)})
    refused(run, "preflight_expect_gpus")


def test_declared_gpu_less_host_passes_with_empty_gpu_fact(tmp_path):
    run = run_role(
        tmp_path,
        "preflight",
        {**CT200, "preflight_expect_gpus": False, "preflight_nvidia_smi": str(tmp_path / "absent-nvidia-smi")},
    )
    assert run.status == "successful", run.failed_tasks()
    assert run.fact("specgate_gpu")["has_gpus"] is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("preflight_tp_size", "eight"),
        ("preflight_expect_gpus", "perhaps"),
        ("preflight_assume_arch", "sm89"),
    ],
)
def test_argument_specs_refuse_bad_values_by_name_before_any_task(tmp_path, variable, value):
    run = run_role(tmp_path, "preflight", {**CT200, variable: value})
    task, _ = refused(run, variable)
    assert "argument" in task.lower()


@pytest.mark.parametrize(
    ("variable", "value"),
    [("cuda_toolkit_source", "conda"), ("sglang_env_wheelhouse_on_host", "perhaps")],
)
def test_later_stage_variable_is_refused_by_preflight_before_any_stage_runs(tmp_path, variable, value):
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_expect_gpus": False, variable: value})
    task, _ = refused(run, variable)
    assert task.startswith("Check the later stages' variables")


def test_refusal_names_the_inventory_variable_when_the_playbook_says_where_it_came_from(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    role_vars = {
        **CT200,
        "preflight_attention_backend": "fa3",
        "preflight_nvidia_smi": str(nvidia_smi),
        "preflight_var_sources": {"preflight_attention_backend": "sglang_service_attention_backend"},
    }
    _, res = refused(run_role(tmp_path, "preflight", role_vars), "sglang_service_attention_backend")
    assert "preflight_attention_backend" not in res["msg"]
