"""How the service's settings fit this host's GPUs: parallel sizes against the GPU count, attention backends
against the SM arch. sglang_service's validate entry point judges them right after preflight's GPU facts,
before any stage changes the host; SGLang itself would only refuse them once the weights are loading.

The values are the renderer's (sglang_flags.deployment_values): typed as argument_specs type them.
"""

from __future__ import annotations

from typing import Any

# Backends that assert an arch at start-up (fa3: SM 80-90; trtllm-gen kernels: SM100 family only).
BACKEND_ARCHES: dict[str, frozenset[str]] = {
    "fa3": frozenset({"sm90"}),
    "trtllm_mla": frozenset({"sm100", "sm103"}),
    "trtllm_mha": frozenset({"sm100", "sm103"}),
}
DEFAULT_BACKEND_HINT: dict[str, str] = {
    "sm90": "fa3",
    "sm100": "trtllm_mla",
    "sm103": "trtllm_mla",
    "sm120": "triton",
}
PREFIX = "sglang_service_"


def _size(values: dict[str, Any], key: str) -> int:
    return int(values.get(key) or 1)


def check_parallel(values: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    """Parallel sizes against the GPUs. For a multi-node group `gpu` is node_group.group_gpu's: `count` is every
    node's GPUs together, `nnodes` and `count_per_node` say how they are split."""
    keys = ("tp_size", "pp_size", "ep_size", "dp_size", "attn_dp_size")
    tp, pp, ep, dp, attn_dp = (_size(values, key) for key in keys)
    problems: list[str] = []
    world = tp * pp * dp
    count = int(gpu.get("count") or 0)
    nnodes = int(gpu.get("nnodes") or 1)
    have = (
        f"this host has {count}"
        if nnodes == 1
        else f"the group's {nnodes} nodes have {count} together ({gpu.get('count_per_node')} each)"
    )
    if gpu.get("has_gpus") and world > count:
        problems.append(
            f"{PREFIX}tp_size: tp_size {tp} x pp_size {pp} x dp_size {dp} needs {world} GPUs; {have}. "
            f"Fix: lower {PREFIX}tp_size/{PREFIX}pp_size/{PREFIX}dp_size so their product is at most {count}."
        )
    if nnodes > 1:
        problems += _check_nodes_split(tp, pp, dp, nnodes)
    if tp % ep:
        problems.append(
            f"{PREFIX}ep_size: ep_size {ep} does not divide tp_size {tp}; experts are split inside the TP group. "
            f"Fix: set {PREFIX}ep_size to a divisor of {tp} (1 or null disables expert parallelism)."
        )
    if tp % attn_dp:
        problems.append(
            f"{PREFIX}attn_dp_size: attn_dp_size {attn_dp} does not divide tp_size {tp}. "
            f"Fix: set {PREFIX}attn_dp_size to a divisor of {tp}."
        )
    return problems


def _check_nodes_split(tp: int, pp: int, dp: int, nnodes: int) -> list[str]:
    """What SGLang 0.5.23 asserts of a multi-node world (srt/arg_groups/validation_hook.py::check_server_args), said
    before any node changes rather than once every node has started."""
    problems: list[str] = []
    if (tp * pp) % nnodes:
        problems.append(
            f"{PREFIX}tp_size: tp_size {tp} x pp_size {pp} does not split evenly over {nnodes} nodes (SGLang: "
            f"\"tp_size must be divisible by number of nodes\"). Fix: set {PREFIX}tp_size (or {PREFIX}pp_size) so "
            f"that tp_size x pp_size is a multiple of {nnodes}, e.g. every GPU of every node."
        )
    if dp > 1:
        problems.append(
            f"{PREFIX}dp_size: dp_size {dp} over {nnodes} nodes; SGLang refuses multi-node data-parallel replicas. "
            f"Fix: set {PREFIX}dp_size to null (one replica per group) and use {PREFIX}attn_dp_size for attention DP "
            "across nodes."
        )
    return problems


def check_backends(values: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    """Backends against the GPUs' arch, or on a GPU-less test host the arch it stands in for (target_arch)."""
    arch = gpu.get("target_arch")
    if not arch:
        return []
    names = gpu.get("names") or []
    stands_for = "preflight_assume_arch"
    what = f"{arch.upper()} ({names[0] if gpu.get('has_gpus') and names else stands_for})"
    problems: list[str] = []
    for key in ("attention_backend", "draft_attention_backend"):
        backend = values.get(key)
        allowed = BACKEND_ARCHES.get(backend or "")
        if allowed is not None and arch not in allowed:
            hint = DEFAULT_BACKEND_HINT.get(arch)
            problems.append(
                f"{PREFIX}{key}: {backend} runs only on {'/'.join(sorted(allowed)).upper()}; this host's GPUs are "
                f"{what}. Fix: set {PREFIX}{key} to {hint!r} (SGLang's choice on {arch.upper()}) or null for "
                "SGLang's default."
            )
    return problems


def fit_problems(values: dict[str, Any], gpu: dict[str, Any]) -> list[str]:
    """Every way the deployment does not fit the host's GPUs; empty when it does."""
    return [*check_parallel(values, gpu), *check_backends(values, gpu)]
