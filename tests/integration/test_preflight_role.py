"""The preflight role end to end on localhost: facts from (fake) nvidia-smi, refusals that name the variable.

Most bad-input cases are unit tests of deployment_checks; these prove the role wiring: argument_specs
refuse bad types and choices, the check module's refusal reaches the play, and nothing reports a change. How
the later stages' settings fit the host is their own validate entry points' (tests/integration/test_deploy_playbook.py).
"""

from __future__ import annotations

import pytest

from integration.preflight_runner import fake_nvidia_smi, run_role

pytestmark = pytest.mark.slow

CT200 = {
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
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_nvidia_smi": str(nvidia_smi)})
    assert run.status == "successful", run.failed_tasks()
    assert run.fact("specgate_gpu")["interconnect"] == "nvlink"
    assert run.fact("specgate_gpu")["arch"] == run.fact("specgate_gpu")["target_arch"] == "sm103"


def test_real_h200_capture_is_one_sm90_gpu(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "h200")
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_nvidia_smi": str(nvidia_smi)})
    assert run.status == "successful", run.failed_tasks()
    gpu = run.fact("specgate_gpu")
    assert gpu["arch"] == "sm90"
    assert gpu["names"][0].startswith("NVIDIA H200")


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
    assert run.fact("specgate_gpu")["target_arch"] is None


def test_a_gpu_less_host_stands_in_for_the_arch_it_is_given(tmp_path):
    run = run_role(
        tmp_path,
        "preflight",
        {**CT200, "preflight_expect_gpus": False, "preflight_assume_arch": "sm120",
         "preflight_nvidia_smi": str(tmp_path / "absent-nvidia-smi")},
    )
    assert run.status == "successful", run.failed_tasks()
    assert (run.fact("specgate_gpu")["arch"], run.fact("specgate_gpu")["target_arch"]) == (None, "sm120")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("preflight_min_ram_gib", "lots"),
        ("preflight_expect_gpus", "perhaps"),
        ("preflight_assume_arch", "sm89"),
    ],
)
def test_argument_specs_refuse_bad_values_by_name_before_any_task(tmp_path, variable, value):
    run = run_role(tmp_path, "preflight", {**CT200, variable: value})
    task, _ = refused(run, variable)
    assert "argument" in task.lower()


def test_a_misspelled_preflight_variable_is_refused_with_the_declared_name(tmp_path):
    run = run_role(tmp_path, "preflight", {**CT200, "preflight_expect_gpus": False, "preflight_min_ram_gb": 1})
    task, _res = refused(run, "preflight_min_ram_gb: did you mean preflight_min_ram_gib?")
    assert task.startswith("Refuse preflight variables")


def test_a_token_given_with_minus_e_gets_a_warning_pointing_to_vault_and_one_from_vars_does_not(tmp_path):
    nvidia_smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    token = "hf_specgate_command_line_token"
    base = {**CT200, "preflight_nvidia_smi": str(nvidia_smi)}

    def warnings(run):
        return [w for e in run.events if e.get("event") == "runner_on_ok"
                for w in e["event_data"].get("res", {}).get("warnings", [])]

    on_argv = run_role(tmp_path / "argv", "preflight", base, cmdline=f"-e model_weights_hf_token={token}")
    assert on_argv.status == "successful", on_argv.failed_tasks()
    (warning,) = [w for w in warnings(on_argv) if "command line" in w]
    assert warning.startswith("model_weights_hf_token came on the command line (-e)")
    assert "vault" in warning
    assert token not in warning
    from_file = run_role(tmp_path / "file", "preflight", {**base, "model_weights_hf_token": token})
    assert from_file.status == "successful", from_file.failed_tasks()
    assert not [w for w in warnings(from_file) if "command line" in w]
