"""SGLang 0.5.23's load snapshot and its ``GET /v1/loads`` renderings.

The scheduler publishes a snapshot of its queues (sglang 0.5.23 srt/managers/load_snapshot.py::LoadSnapshot, built
by srt/managers/scheduler_components/load_inquirer.py::SchedulerLoadInquirer.get_loads and written by
srt/managers/scheduler.py::publish_load_snapshot); ``/v1/loads`` reads the last one per DP rank
(srt/entrypoints/v1_loads.py). This module holds the snapshot's fields and the endpoint's JSON and Prometheus
shapes; the engine (engine.py) decides what goes in and when it is published.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

# sglang 0.5.23 srt/managers/load_snapshot.py::LoadSnapshot.VALID_SECTIONS
VALID_SECTIONS = frozenset({"core", "memory", "spec", "lora", "disagg", "queues", "all"})
# v1_loads.py::_format_loads_prometheus: section -> metric name prefix
SECTION_PREFIXES = {"speculative": "spec", "disaggregation": "disagg"}
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def disaggregation_null() -> dict[str, Any]:
    # load_snapshot.py::DisaggregationMetrics as load_inquirer.py fills it outside PD disaggregation
    return {
        "mode": "null",
        "prefill_bootstrap_queue_reqs": 0,
        "prefill_inflight_queue_reqs": 0,
        "decode_prealloc_queue_reqs": 0,
        "decode_transfer_queue_reqs": 0,
        "decode_retracted_queue_reqs": 0,
        "kv_transfer_speed_gb_s": 0.0,
        "kv_transfer_latency_ms": 0.0,
    }


def queues(waiting: int) -> dict[str, Any]:
    # load_snapshot.py::QueueMetrics (grammar/paused/retracted/prealloc_ready: nothing the sim simulates)
    return {"waiting": waiting, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}


@dataclass(frozen=True)
class LoadSnapshot:
    """sglang 0.5.23 srt/managers/load_snapshot.py::LoadSnapshot: the flat "core" fields in their order, then the
    sections (None = absent). ``memory`` stays None: SGLang leaves it out when the model runner cannot measure its
    memory (load_inquirer.py catches the AttributeError), and the sim measures no GPU memory. ``lora`` stays None
    (no --enable-lora)."""

    timestamp: float = 0.0
    dp_rank: int = 0
    num_running_reqs: int = 0
    num_waiting_reqs: int = 0
    num_waiting_uncached_tokens: int = 0
    num_used_tokens: int = 0
    num_total_tokens: int = 0
    num_active_tokens: int = 0
    num_prealloc_ready_tokens: int = 0
    max_total_num_tokens: int = 0
    max_running_requests: int = 0
    token_usage: float = 0.0
    gen_throughput: float = 0.0
    cache_hit_rate: float = 0.0
    utilization: float = 0.0
    total_prefill_uncached_tokens: int = 0
    total_prefill_busy_us: int = 0
    decode_moments: list[float] | None = None
    memory: dict[str, Any] | None = None
    speculative: dict[str, Any] | None = None
    lora: dict[str, Any] | None = None
    disaggregation: dict[str, Any] | None = None
    queues: dict[str, Any] | None = None

    def to_dict(self, include: set[str] | None = None) -> dict[str, Any]:
        """load_snapshot.py::LoadSnapshot.to_dict, ValueError included."""
        load = {key: getattr(self, key) for key in CORE_KEYS}
        if include is None or "all" in include:
            include_all = True
        else:
            if not include <= VALID_SECTIONS:
                raise ValueError(
                    f"Invalid include sections: {include - VALID_SECTIONS}. Valid options: {sorted(VALID_SECTIONS)}"
                )
            if include == {"core"}:
                return load
            include_all = False
        for name, include_name in (
            ("memory", "memory"),
            ("speculative", "spec"),
            ("lora", "lora"),
            ("disaggregation", "disagg"),
            ("queues", "queues"),
        ):
            section = getattr(self, name)
            if section is None or (not include_all and include_name not in include):
                continue
            load[name] = dict(section)
        return load


SECTION_FIELDS = frozenset({"memory", "speculative", "lora", "disaggregation", "queues"})
# load_snapshot.py::_CORE_KEYS: every field but the sections, in declaration order
CORE_KEYS = tuple(f.name for f in dataclasses.fields(LoadSnapshot) if f.name not in SECTION_FIELDS)


def format_prometheus(loads: list[LoadSnapshot], include: set[str] | None) -> str:
    """v1_loads.py::_format_loads_prometheus: one gauge per numeric field (sections prefixed), a ``dp_rank`` label,
    ``# TYPE`` lines only; strings, lists and None are left out."""
    samples: dict[str, list[tuple[int, Any]]] = {}
    for load in loads:
        load_dict = load.to_dict(include)
        dp_rank = load_dict.pop("dp_rank")
        for key, value in load_dict.items():
            if isinstance(value, dict):
                prefix = SECTION_PREFIXES.get(key, key)
                for sub_key, sub_value in value.items():
                    if isinstance(sub_value, (int, float)):
                        samples.setdefault(f"sglang_{prefix}_{sub_key}", []).append((dp_rank, sub_value))
            elif isinstance(value, (int, float)):
                samples.setdefault(f"sglang_{key}", []).append((dp_rank, value))
    lines = []
    for name, values in samples.items():
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{dp_rank="{dp_rank}"}} {value}' for dp_rank, value in values]
    return "\n".join(lines) + "\n"


def num_accelerators(args: dict[str, Any]) -> int:
    """v1_loads.py::_num_accelerators_per_dp_rank: tp * pp, divided among the DP ranks under attention DP
    (srt/runtime_context.py: attn_dp_enabled = attn_dp_size > 1, num_dp_ranks = dp_size * attn_dp_size)."""
    count = int(args["tp_size"]) * int(args["pp_size"])
    if int(args.get("attn_dp_size") or 1) > 1:
        count //= num_dp_ranks(args)
    return count


def num_dp_ranks(args: dict[str, Any]) -> int:
    # srt/runtime_context.py::num_dp_ranks_of; the tokenizer manager's elastic_worker_count starts at it
    return int(args.get("dp_size") or 1) * int(args.get("attn_dp_size") or 1)
