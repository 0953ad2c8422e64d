"""cuda_toolkit and sglang_env refuse bad requests in their validate phase, naming the variable.

Run in check mode and limited to the validate tags, so even a refusal that did not happen could not
install anything on the test machine.
"""

from __future__ import annotations

import pytest

from integration.preflight_runner import run_role

pytestmark = pytest.mark.slow

CUDA_ONLY = "--check --tags cuda_toolkit_validate"
SGLANG_ENV_ONLY = "--check --tags sglang_env_validate"


def refused(run, variable, task_prefix):
    assert run.status == "failed", run.status
    failed = run.failed_tasks()
    assert len(failed) == 1, failed
    task, res = failed[0]
    assert task.startswith(task_prefix), task
    assert variable in res["msg"], res["msg"]
    assert run.changed_tasks() == []


def test_cuda_validate_passes_for_sm120_on_cuda_13(tmp_path):
    run = run_role(tmp_path, "cuda_toolkit", {"cuda_toolkit_arch": "sm120"}, CUDA_ONLY)
    assert run.status == "successful", run.failed_tasks()


def test_cuda_on_gpu_less_host_without_cuda_arch_is_refused(tmp_path):
    run = run_role(tmp_path, "cuda_toolkit", {}, CUDA_ONLY)
    refused(run, "cuda_toolkit_arch", "Work out CUDA_HOME")


def test_cuda_below_the_arch_minimum_is_refused(tmp_path):
    run = run_role(
        tmp_path,
        "cuda_toolkit",
        {"cuda_toolkit_arch": "sm103", "cuda_toolkit_source": "apt", "cuda_toolkit_version": "12.8"},
        CUDA_ONLY,
    )
    refused(run, "cuda_toolkit_version", "Work out CUDA_HOME")


def test_apt_repository_without_signing_key_is_refused(tmp_path):
    role_vars = {
        "cuda_toolkit_arch": "sm120",
        "cuda_toolkit_source": "apt",
        "cuda_toolkit_apt_repo_url": "https://apt.example.internal/cuda",
    }
    run = run_role(tmp_path, "cuda_toolkit", role_vars, CUDA_ONLY)
    refused(run, "cuda_toolkit_apt_key_url", "Refuse an apt repository without its signing key")


def test_unknown_cuda_source_is_refused_by_argument_specs(tmp_path):
    run = run_role(tmp_path, "cuda_toolkit", {"cuda_toolkit_arch": "sm120", "cuda_toolkit_source": "conda"}, CUDA_ONLY)
    refused(run, "cuda_toolkit_source", "Validating arguments")


def test_wheelhouse_source_without_wheelhouse_is_refused(tmp_path):
    run = run_role(tmp_path, "sglang_env", {"sglang_env_source": "wheelhouse"}, SGLANG_ENV_ONLY)
    refused(run, "sglang_env_wheelhouse", "Work out the venv's requirements")


def test_unpinned_sglang_is_refused(tmp_path):
    run = run_role(tmp_path, "sglang_env", {"sglang_env_packages": ["sglang"]}, SGLANG_ENV_ONLY)
    refused(run, "sglang_env_packages", "Work out the venv's requirements")


def test_git_source_on_a_branch_is_refused(tmp_path):
    role_vars = {
        "sglang_env_source": "git",
        "sglang_env_packages": ["flashinfer-python==0.7.2"],
        "sglang_env_git_url": "https://git.example.internal/sglang.git",
        "sglang_env_git_ref": "ddtree",
    }
    run = run_role(tmp_path, "sglang_env", role_vars, SGLANG_ENV_ONLY)
    refused(run, "sglang_env_git_ref", "Work out the venv's requirements")
