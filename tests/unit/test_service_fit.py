"""How the service's settings fit the host's GPUs (service_fit), judged by sglang_service's validate entry point:
each misfit names the sglang_service_* variable the user sets and a fix that works."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.service.service_fit import fit_problems
from ansible.module_utils.specgate.service.sglang_flags import deployment_values

pytestmark = pytest.mark.host


def gpu(arch="sm120", count=8, name="NVIDIA RTX PRO 6000 Blackwell Server Edition"):
    return {"count": count, "names": [name] * count, "arch": arch, "target_arch": arch, "has_gpus": True}


NO_GPU_SM120 = {"count": 0, "names": [], "arch": None, "target_arch": "sm120", "has_gpus": False}
CT200 = {"model_path": "/m", "tp_size": 8, "ep_size": 8, "attention_backend": "triton"}


def problems(gpu_fact=None, **changes):
    return fit_problems(deployment_values({**CT200, **changes}), gpu() if gpu_fact is None else gpu_fact)


def only_variable(found):
    assert len(found) == 1, found
    return found[0].split(":", 1)[0]


def test_ct200_tp8_ep8_on_eight_sm120_gpus_fits():
    assert problems() == []


def test_b300_trtllm_mla_on_sm103_fits():
    assert problems(gpu("sm103", 8, "NVIDIA B300 SXM6 AC"), attention_backend="trtllm_mla") == []


def test_tensor_parallel_larger_than_gpu_count_is_refused():
    found = problems(tp_size=16, ep_size=1)
    assert only_variable(found) == "sglang_service_tp_size"
    assert "needs 16 GPUs; this host has 8" in found[0]


def test_pipeline_times_tensor_parallel_counts_gpus():
    assert only_variable(problems(tp_size=8, ep_size=1, pp_size=2)) == "sglang_service_tp_size"


def test_values_typed_as_the_user_typed_them_are_read_as_argument_specs_read_them():
    assert only_variable(problems(tp_size="16", ep_size="1")) == "sglang_service_tp_size"


def test_a_gpu_less_host_has_no_count_to_exceed():
    assert problems(NO_GPU_SM120, tp_size=16, ep_size=1) == []


def test_expert_parallel_must_divide_tensor_parallel():
    assert only_variable(problems(ep_size=3)) == "sglang_service_ep_size"


def test_attention_dp_must_divide_tensor_parallel():
    assert only_variable(problems(attn_dp_size=3)) == "sglang_service_attn_dp_size"


def test_fa3_on_blackwell_is_refused_with_triton_hint():
    found = problems(attention_backend="fa3")
    assert only_variable(found) == "sglang_service_attention_backend"
    assert "'triton'" in found[0]


def test_fa3_on_hopper_fits():
    assert problems(gpu("sm90", 8, "NVIDIA H200"), attention_backend="fa3") == []


@pytest.mark.parametrize("backend", ["trtllm_mla", "trtllm_mha"])
def test_trtllm_backends_on_sm120_are_refused(backend):
    assert only_variable(problems(attention_backend=backend)) == "sglang_service_attention_backend"


def test_draft_backend_is_checked_against_the_arch_too():
    assert only_variable(problems(draft_attention_backend="fa3")) == "sglang_service_draft_attention_backend"


def test_backend_checked_against_the_arch_a_gpu_less_host_stands_in_for():
    found = problems(NO_GPU_SM120, attention_backend="fa3")
    assert only_variable(found) == "sglang_service_attention_backend"
    assert "preflight_assume_arch" in found[0]


def test_no_arch_known_skips_the_backend_check():
    no_arch = {**NO_GPU_SM120, "target_arch": None}
    assert problems(no_arch, attention_backend="fa3") == []
