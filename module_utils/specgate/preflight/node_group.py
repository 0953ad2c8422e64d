"""preflight's checks of a multi-node group, before anything on any node changes: the nodes run one SGLang
deployment together (one release, one NCCL world), so they must agree on GPU arch, GPU count, CUDA driver major and
NVIDIA driver major. Each node is compared with rank 0; a problem names the host that differs and what to do.

SGLang 0.5.23 places the same number of ranks on every node: srt/entrypoints/engine.py's per-node rank ranges split
tp_size * pp_size evenly by nnodes, so nodes with fewer GPUs than rank 0 cannot hold their share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.specgate.preflight.deployment_checks import Problem

GROUP_VARIABLE = "sglang_service_nodes_group"


def _major(version: Any) -> str | None:
    if version in (None, ""):
        return None
    return str(version).split(".", 1)[0]


# (what is compared, how it is read from specgate_gpu, how the refusal names the value)
_COMPARED = (
    ("GPU arch", lambda gpu: gpu.get("arch"), "arch"),
    ("GPU count", lambda gpu: int(gpu.get("count") or 0), "GPUs"),
    ("CUDA driver major", lambda gpu: _major(gpu.get("cuda_driver_version")), "CUDA"),
    ("NVIDIA driver major", lambda gpu: _major(gpu.get("driver_version")), "driver"),
)


def _missing_facts_message(missing: list[str]) -> str:
    return f"no GPU facts for node(s) {', '.join(missing)}; every node's GPUs are compared before any changes."


def _difference_message(host: str, rank0: str, what: str, found: str, expected: str) -> str:
    return f"node {host} differs from rank 0 ({rank0}) in {what}: {found} against {expected}; the nodes of one " \
        "deployment must match."


def check_node_gpus(nodes: Sequence[str], gpus: Mapping[str, Mapping[str, Any] | None]) -> list[Problem]:
    """Every way a node's GPUs differ from rank 0's (`nodes` in rank order, `gpus` each host's specgate_gpu)."""
    if not nodes:
        return []
    missing = [host for host in nodes if not gpus.get(host)]
    if missing:
        return [
            Problem(
                GROUP_VARIABLE,
                f"no GPU facts for node(s) {', '.join(missing)}; every node's GPUs are compared before any changes.",
                "run the play on every host of the group (do not --limit it to some nodes), and make each reachable.",
            )
        ]
    rank0 = nodes[0]
    reference = gpus[rank0] or {}
    problems: list[Problem] = []
    for host in nodes[1:]:
        gpu = gpus[host] or {}
        for what, read, unit in _COMPARED:
            expected, found = read(reference), read(gpu)
            if found != expected:
                problems.append(
                    Problem(
                        GROUP_VARIABLE,
                        _difference_message(host, rank0, what, f"{found} {unit}", f"{expected}"),
                        f"give {host} the same GPUs and driver as {rank0}, or take it out of the group.",
                    )
                )
    return problems


def group_gpu(nodes: Sequence[str], gpus: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Rank 0's specgate_gpu with `count` the GPUs of all nodes together and `nnodes`, for the parallel-size checks
    (service_fit.check_parallel). Only meaningful once check_node_gpus found nothing."""
    reference = dict(gpus[nodes[0]])
    reference["count_per_node"] = int(reference.get("count") or 0)
    reference["count"] = sum(int((gpus[host] or {}).get("count") or 0) for host in nodes)
    reference["nnodes"] = len(nodes)
    return reference
