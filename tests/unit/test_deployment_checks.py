"""preflight's host checks: each bad host is refused with the variable to change and the fix."""

from __future__ import annotations

from dataclasses import replace

import pytest
from ansible.module_utils.specgate.preflight.deployment_checks import Deployment, check_deployment, failure_message

pytestmark = pytest.mark.host

GiB = 1024


def gpu(arch="sm120", count=8, capability="12.0", name="NVIDIA RTX PRO 6000 Blackwell Server Edition", cuda="13.0"):
    return {
        "count": count,
        "names": [name] * count,
        "arch": arch,
        "compute_capability": capability,
        "memory_total_mib": 97887,
        "interconnect": "pcie",
        "driver_version": "580.95.05",
        "cuda_driver_version": cuda,
        "has_gpus": True,
    }


NO_GPU = {"count": 0, "names": [], "arch": None, "compute_capability": None, "has_gpus": False}
HOST = {
    "mem_total_mib": 512 * GiB,
    "disk": [{"path": "/models", "free_mib": 30 * GiB}, {"path": "/opt/specgate", "free_mib": 200 * GiB}],
    "os_id": "debian",
    "os_version_id": "12",
}
CT200 = Deployment()


def problems(dep=CT200, gpu_fact=None, host=HOST):
    return check_deployment(dep, gpu() if gpu_fact is None else gpu_fact, host)


def only_variable(found):
    assert len(found) == 1, [str(p) for p in found]
    return found[0].variable


def test_ct200_eight_sm120_gpus_pass():
    assert problems() == []


def test_b300_on_sm103_passes():
    assert problems(gpu_fact=gpu("sm103", 8, "10.3", "NVIDIA B300 SXM6 AC")) == []


def test_host_without_gpus_is_refused_unless_declared():
    found = problems(gpu_fact=NO_GPU)
    assert only_variable(found) == "preflight_expect_gpus"
    assert "preflight_expect_gpus: false" in found[0].fix


def test_declared_gpu_less_host_skips_gpu_checks():
    assert problems(replace(CT200, expect_gpus=False), NO_GPU) == []


def test_unknown_compute_capability_is_refused():
    found = problems(gpu_fact=gpu(None, 8, "8.9", "NVIDIA L40S"))
    assert only_variable(found) == "specgate_gpu"
    assert "8.9" in found[0].message


def test_mixed_gpu_models_are_refused():
    fact = gpu("sm90", 2, "9.0,12.0")
    fact["names"] = ["NVIDIA H200", "NVIDIA RTX PRO 6000 Blackwell Server Edition"]
    assert only_variable(problems(gpu_fact=fact)) == "specgate_gpu"


def test_disk_below_minimum_names_the_path():
    found = problems(replace(CT200, min_free_gib={"/models": 600}))
    assert only_variable(found) == "preflight_min_free_gib"
    assert "/models has 30.0 GiB free" in found[0].message


def test_ram_below_minimum_is_refused():
    assert only_variable(problems(replace(CT200, min_ram_gib=1024))) == "preflight_min_ram_gib"


def test_unsupported_os_is_refused():
    found = problems(replace(CT200, supported_os=["ubuntu24.04"]))
    assert only_variable(found) == "preflight_supported_os"
    assert "debian12" in found[0].message


def test_every_problem_is_listed_in_one_message():
    message = failure_message(problems(replace(CT200, min_ram_gib=1024, supported_os=["ubuntu24.04"])))
    for variable in ("preflight_min_ram_gib", "preflight_supported_os"):
        assert f"- {variable}:" in message
    assert "nothing on the host was changed" in message


def test_the_later_stages_settings_are_not_preflights_to_judge():
    """Parallel sizes, backends, CUDA and the SGLang release are each stage's own check (its validate entry point):
    preflight takes none of them, so no second copy of their values or rules lives here."""
    assert {"tp_size", "attention_backend", "cuda_version", "sglang_version"}.isdisjoint(vars(Deployment()))
