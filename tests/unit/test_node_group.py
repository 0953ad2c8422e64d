"""preflight's group checks (node_group, service_fit over a group): the nodes agree on GPUs and drivers, and the
parallel sizes fit the GPUs of all nodes together; each refusal names the host or the variable and the fix."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.preflight.node_group import check_node_gpus, group_gpu
from ansible.module_utils.specgate.service.service_fit import fit_problems
from ansible.module_utils.specgate.service.sglang_flags import deployment_values
from sglang_nodes import FilterModule


def h100(count=8, arch="sm90", cuda="12.8", driver="570.124.06"):
    return {"has_gpus": True, "count": count, "names": ["NVIDIA H100 80GB HBM3"] * count, "arch": arch,
            "target_arch": arch, "compute_capability": "9.0", "cuda_driver_version": cuda, "driver_version": driver}


NODES = ["h100-a", "h100-b"]
KIMI = {"model_path": "/m", "tp_size": 16, "ep_size": 16, "attention_backend": "fa3"}


def differences(**b_changes):
    return check_node_gpus(NODES, {"h100-a": h100(), "h100-b": h100(**b_changes)})


def test_matching_nodes_pass():
    assert differences() == []
    # a minor CUDA or driver difference is not refused: the majors are what must agree
    assert differences(cuda="12.9", driver="570.172.08") == []


@pytest.mark.parametrize(
    ("changes", "what"),
    [
        ({"arch": "sm100"}, "GPU arch"),
        ({"count": 4}, "GPU count"),
        ({"cuda": "13.0"}, "CUDA driver major"),
        ({"driver": "580.65.06"}, "NVIDIA driver major"),
    ],
)
def test_a_node_that_differs_from_rank_0_is_named(changes, what):
    found = differences(**changes)
    assert len(found) == 1, found
    assert found[0].variable == "sglang_service_nodes_group"
    assert f"node h100-b differs from rank 0 (h100-a) in {what}" in found[0].message
    assert "h100-b" in found[0].fix


def test_a_node_without_gpu_facts_is_named():
    found = check_node_gpus(NODES, {"h100-a": h100()})
    assert len(found) == 1, found
    assert "h100-b" in found[0].message
    assert "--limit" in found[0].fix


def group_problems(**changes):
    gpu = group_gpu(NODES, {"h100-a": h100(), "h100-b": h100()})
    return fit_problems(deployment_values({**KIMI, **changes}), gpu)


def test_tp16_over_two_eight_gpu_nodes_fits_the_group_but_not_one_host():
    assert group_problems() == []
    single = fit_problems(deployment_values(KIMI), h100())
    assert len(single) == 1, single
    assert "this host has 8" in single[0]


def test_more_gpus_than_the_group_has_is_refused_naming_the_variable():
    found = group_problems(tp_size=32, ep_size=1)
    assert len(found) == 1, found
    assert found[0].startswith("sglang_service_tp_size: ")
    assert "the group's 2 nodes have 16 together (8 each)" in found[0]
    assert "Fix:" in found[0]


def test_a_world_that_does_not_split_over_the_nodes_is_refused():
    found = group_problems(tp_size=3, ep_size=1)
    assert len(found) == 1, found
    assert found[0].startswith("sglang_service_tp_size: ")
    assert "tp_size must be divisible by number of nodes" in found[0]


def test_data_parallel_replicas_over_nodes_are_refused():
    found = group_problems(tp_size=8, ep_size=8, dp_size=2)
    assert [problem.split(":", 1)[0] for problem in found] == ["sglang_service_dp_size"]


def test_expert_parallel_is_checked_against_the_group_tp():
    found = group_problems(ep_size=32)
    assert [problem.split(":", 1)[0] for problem in found] == ["sglang_service_ep_size"]


def test_filters_refuse_a_mismatched_group_and_sum_the_gpus():
    filters = FilterModule().filters()
    hostvars = {"h100-a": {"specgate_gpu": h100()}, "h100-b": {"specgate_gpu": h100(count=4)}}
    refusal = filters["specgate_node_group_refusal"](NODES, hostvars)
    assert "sglang_service_nodes_group: node h100-b differs from rank 0 (h100-a) in GPU count" in refusal
    assert "h100-b" in filters["specgate_node_group_refusal"](NODES, {"h100-a": {"specgate_gpu": h100()}})
    matching = {"h100-a": {"specgate_gpu": h100()}, "h100-b": {"specgate_gpu": h100()}}
    assert filters["specgate_node_group_refusal"](NODES, matching) == ""
    assert filters["specgate_node_group_gpu"](NODES, hostvars)["count"] == 12
