"""preflight's whole-deployment checks: each bad input is refused with the variable to change and the fix."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from ansible.module_utils.specgate.cuda_lanes import cuda_lane_for_sglang, cuda_meets_minimum
from ansible.module_utils.specgate.deployment_checks import Deployment, check_deployment, failure_message

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
CT200 = Deployment(tp_size=8, ep_size=8, attention_backend="triton")


def problems(dep=CT200, gpu_fact=None, host=HOST, assume_arch=None):
    return check_deployment(dep, gpu() if gpu_fact is None else gpu_fact, host, assume_arch)


def only_variable(found):
    assert len(found) == 1, [str(p) for p in found]
    return found[0].variable


def test_ct200_dflash_tp8_ep8_on_eight_sm120_gpus_passes():
    assert problems() == []


def test_b300_trtllm_mla_on_sm103_passes():
    dep = replace(CT200, attention_backend="trtllm_mla")
    assert problems(dep, gpu("sm103", 8, "10.3", "NVIDIA B300 SXM6 AC")) == []


def test_host_without_gpus_is_refused_unless_declared():
    found = problems(gpu_fact=NO_GPU)
    assert only_variable(found) == "preflight_expect_gpus"
    assert "preflight_expect_gpus: false" in found[0].fix


def test_declared_gpu_less_host_skips_gpu_checks():
    dep = replace(CT200, expect_gpus=False, tp_size=16)
    assert problems(dep, NO_GPU) == []


def test_tensor_parallel_larger_than_gpu_count_is_refused():
    found = problems(replace(CT200, tp_size=16, ep_size=1))
    assert only_variable(found) == "preflight_tp_size"
    assert "needs 16 GPUs per node; this host has 8" in found[0].message


def test_pipeline_times_tensor_parallel_counts_gpus():
    found = problems(replace(CT200, tp_size=8, ep_size=1, pp_size=2))
    assert only_variable(found) == "preflight_tp_size"


def test_multi_node_divides_gpus_per_node():
    assert problems(replace(CT200, tp_size=16, ep_size=1, nnodes=2)) == []


def test_world_not_divisible_by_nodes_is_refused():
    found = problems(replace(CT200, tp_size=3, ep_size=1, nnodes=2))
    assert "preflight_nnodes" in [p.variable for p in found]


@pytest.mark.parametrize("name", ["tp_size", "pp_size", "ep_size", "dp_size", "attn_dp_size", "nnodes"])
def test_parallel_size_below_one_is_refused(name):
    found = problems(replace(CT200, **{name: 0}))
    assert f"preflight_{name}" in [p.variable for p in found]


def test_expert_parallel_must_divide_tensor_parallel():
    assert only_variable(problems(replace(CT200, ep_size=3))) == "preflight_ep_size"


def test_attention_dp_must_divide_tensor_parallel():
    dep = replace(CT200, attn_dp_size=3)
    assert only_variable(problems(dep)) == "preflight_attn_dp_size"


def test_speculative_rules_are_the_renderers_and_not_judged_here_twice():
    """DFLASH needs pp 1, attention-DP the DP LM head, DDTREE the patched install: sglang_flags' rules, judged by
    sglang_service's settings entry point right after preflight (tests/integration/test_deploy_playbook.py)."""
    assert not hasattr(Deployment(), "speculative_algorithm")
    assert problems(replace(CT200, tp_size=4, ep_size=4, pp_size=2)) == []


def test_fa3_on_blackwell_is_refused_with_triton_hint():
    found = problems(replace(CT200, attention_backend="fa3"))
    assert only_variable(found) == "preflight_attention_backend"
    assert "'triton'" in found[0].fix


def test_fa3_on_hopper_is_fine():
    h200 = gpu("sm90", 8, "9.0", "NVIDIA H200", cuda="13.0")
    assert problems(replace(CT200, attention_backend="fa3"), h200) == []


@pytest.mark.parametrize("backend", ["trtllm_mla", "trtllm_mha"])
def test_trtllm_backends_on_sm120_are_refused(backend):
    assert only_variable(problems(replace(CT200, attention_backend=backend))) == "preflight_attention_backend"


def test_draft_backend_is_checked_against_the_arch_too():
    found = problems(replace(CT200, draft_attention_backend="fa3"))
    assert only_variable(found) == "preflight_draft_attention_backend"


def test_backend_checked_against_assumed_arch_on_gpu_less_host():
    dep = replace(CT200, expect_gpus=False, attention_backend="fa3")
    assert only_variable(problems(dep, NO_GPU, assume_arch="sm120")) == "preflight_attention_backend"


@pytest.mark.parametrize(
    ("arch", "capability", "cuda", "minimum"),
    [("sm120", "12.0", "12.6", "12.8"), ("sm100", "10.0", "12.4", "12.8"), ("sm103", "10.3", "12.8", "12.9")],
)
def test_cuda_below_arch_minimum_is_refused(arch, capability, cuda, minimum):
    dep = replace(CT200, sglang_version="0.5.19", cuda_version=cuda, attention_backend=None)
    found = problems(dep, gpu(arch, 8, capability))
    assert only_variable(found) == "preflight_cuda_version"
    assert f"at least {minimum}" in found[0].message


def test_sglang_0_5_23_on_cuda_12_lane_is_refused():
    found = problems(replace(CT200, cuda_version="12.9"))
    assert only_variable(found) == "preflight_cuda_version"
    assert "CUDA 13" in found[0].message


def test_sglang_0_5_19_accepts_cuda_12():
    assert problems(replace(CT200, sglang_version="0.5.19", cuda_version="12.9")) == []


def test_driver_older_than_toolkit_major_is_refused():
    found = problems(gpu_fact=gpu(cuda="12.8"))
    assert only_variable(found) == "preflight_cuda_version"
    assert "upgrade the NVIDIA driver" in found[0].fix


@pytest.mark.parametrize(("field", "value"), [("cuda_version", "thirteen"), ("sglang_version", "latest")])
def test_malformed_versions_are_refused_by_name(field, value):
    assert f"preflight_{field}" in [p.variable for p in problems(replace(CT200, **{field: value}))]


def test_unknown_compute_capability_is_refused():
    found = problems(gpu_fact=gpu(None, 8, "8.9", "NVIDIA L40S"))
    assert only_variable(found) == "specgate_gpu"
    assert "8.9" in found[0].message


def test_mixed_gpu_models_are_refused():
    fact = gpu("sm90", 2, "9.0,12.0")
    fact["names"] = ["NVIDIA H200", "NVIDIA RTX PRO 6000 Blackwell Server Edition"]
    assert only_variable(problems(replace(CT200, tp_size=2, ep_size=2), fact)) == "specgate_gpu"


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
    dep = replace(CT200, pp_size=2, attention_backend="fa3", cuda_version="12.9")
    message = failure_message(problems(dep))
    for variable in ("preflight_tp_size", "preflight_attention_backend", "preflight_cuda_version"):
        assert f"- {variable}:" in message
    assert "nothing on the host was changed" in message


def test_cuda_lane_table():
    assert cuda_lane_for_sglang("0.5.23").allowed_majors == (13,)
    assert cuda_lane_for_sglang("0.5.20").allowed_majors == (13,)
    assert cuda_lane_for_sglang("0.5.19").allowed_majors == (12, 13)
    assert cuda_meets_minimum("sm103", "12.9")
    assert not cuda_meets_minimum("sm103", "12.8")
    assert cuda_meets_minimum("sm90", "12.0")


def test_refusals_name_the_inventory_variable_the_playbook_fed_preflight_from():
    from ansible.module_utils.specgate.deployment_checks import in_users_words

    found = problems(replace(CT200, attention_backend="fa3", pp_size=2))
    renamed = in_users_words(
        found,
        {
            "preflight_attention_backend": "sglang_service_attention_backend",
            "preflight_tp_size": "sglang_service_tp_size",
            "preflight_pp_size": "sglang_service_pp_size",
        },
    )
    assert [p.variable for p in renamed] == ["sglang_service_tp_size", "sglang_service_attention_backend"]
    assert "set sglang_service_attention_backend to 'triton'" in renamed[1].fix
    assert "lower sglang_service_tp_size/sglang_service_pp_size" in renamed[0].fix
    assert in_users_words(found, {}) == found


@pytest.mark.parametrize("version", ["0.5.11", "0.5.15", "0.5.19", "0.5.23", "0.5.23+ddtree"])
def test_every_version_the_renderer_supports_passes_preflight(version):
    cuda = "12.9" if version in ("0.5.11", "0.5.15", "0.5.19") else "13.0"
    assert problems(replace(CT200, sglang_version=version, cuda_version=cuda), gpu(cuda="13.0")) == []


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        ("0.5.24", r"0\.5\.24 is not a version specgate renders configs for \(supported: 0\.5\.11, 0\.5\.15"),
        ("0.5.10", "is not a version specgate renders configs for"),
        ("0.5.23.post1", r"post-release of 0\.5\.23.*Pin sglang==0\.5\.23"),
        ("0.5.24rc1", "pre-release or development build"),
    ],
)
def test_a_pin_the_renderer_refuses_is_refused_first_with_the_renderers_reason(version, reason):
    """One rule (sglang_flags.parse_sglang_version), judged first: before CUDA, the venv and the weights."""
    found = problems(replace(CT200, sglang_version=version, tp_size=16))  # a second, unrelated problem too
    assert found[0].variable == "preflight_sglang_version", [str(p) for p in found]
    assert re.search(reason, found[0].message), found[0].message
    assert "preflight_tp_size" in [p.variable for p in found[1:]]
    # The lane and DFLASH checks presume a supported release: no second opinion on the same pin.
    assert [p.variable for p in found].count("preflight_sglang_version") == 1
    assert "preflight_cuda_version" not in [p.variable for p in found]


def test_preflight_and_the_renderer_agree_on_every_version_shape():
    from ansible.module_utils.specgate.sglang_flags import SglangConfigError, parse_sglang_version

    for version in ("0.5.11", "0.5.15", "0.5.19", "0.5.23", "0.5.23+ddtree", "0.5.22", "0.5.24",
                    "0.5.23.post1", "0.5.23+cu130", "0.5.24.dev0", "latest", "0.5"):
        try:
            parse_sglang_version(version)
            renders = True
        except SglangConfigError:
            renders = False
        refused = "preflight_sglang_version" in [p.variable for p in problems(replace(CT200, sglang_version=version))]
        assert refused is not renders, version
