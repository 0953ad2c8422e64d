"""One sweep point's benchmark numbers from the sim's engine, without HTTP: the shape of spec_gate's result.

scripts/bench_sweep_search.py and the sweep tests drive thousands of cells; going through the server would only
add the HTTP layer's time. The numbers come from the same Engine the server runs (continuous batching, sampled
acceptance per verify step), so a sweep over them sees the sim's speed/acceptance model with its noise.
The cell keys are spec_gate's (module_utils/specgate/gate/bench_cells.py::summarize_cell) for what a sweep reads.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from specgate_sim.engine import Engine, Job
from specgate_sim.specmodel import PROFILES, SpecConfig

SCHEMA = "specgate.bench/v1"


@dataclass(frozen=True)
class CellPlan:
    set_name: str  # a prompt kind of the sim: code, math or chat
    context_tokens: int
    concurrency: int


def _ms_stats(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50_ms": None, "mean_ms": None}
    return {"p50_ms": statistics.median(values), "mean_ms": statistics.fmean(values)}


def bench_cell(
    cfg: SpecConfig,
    plan: CellPlan,
    *,
    requests: int,
    output_tokens: int,
    seed: int,
    profile: str = "ct200",
) -> dict:
    """``requests`` requests of ``plan.set_name`` at ``plan.concurrency`` in flight, on a fresh engine."""
    num_draft_tokens = cfg.budget + 1 if cfg.algorithm == "DDTREE" else cfg.block_size
    engine = Engine(cfg, max_running=plan.concurrency, time_scale=0.0, num_draft_tokens=num_draft_tokens,
                    lat=PROFILES[profile])  # fmt: skip
    jobs = [
        Job(
            prompt_tokens=plan.context_tokens,
            pieces=["x"] * output_tokens,
            finish_reason={"type": "length", "length": output_tokens},
            kind=plan.set_name,
            seed=seed * 7919 + i * 31 + len(plan.set_name),
        )
        for i in range(requests)
    ]

    # the benchmark client keeps ``concurrency`` requests in flight and sends the next as one finishes, so a
    # request's TTFT starts when it is sent, not when the cell starts
    slots = asyncio.Semaphore(plan.concurrency)

    async def one(job: Job) -> None:
        async with slots:
            async for _ in engine.generate(job):
                pass

    async def drive() -> None:
        engine.start()
        try:
            await asyncio.gather(*(one(job) for job in jobs))
        finally:
            await engine.stop()

    asyncio.run(drive())
    duration = max(j.finished_at or 0.0 for j in jobs) - min(j.arrival_ns for j in jobs) / 1e9
    out_tokens = sum(j.emitted for j in jobs)
    verify = sum(j.verify_ct for j in jobs)
    tpot = [1000.0 * j.decode_seconds / (j.emitted - 1) for j in jobs if j.emitted > 1]
    return {
        "set": plan.set_name,
        "context": f"ctx{plan.context_tokens}",
        "context_tokens": plan.context_tokens,
        "concurrency": plan.concurrency,
        "requests": requests,
        "completed": requests,
        "duration_s": duration,
        "output_tokens": out_tokens,
        "output_tok_s": out_tokens / duration if duration > 0 else None,
        "ttft": _ms_stats([1000.0 * j.ttft_seconds for j in jobs]),
        "tpot": _ms_stats(tpot),
        # the server counts the prefill's token as committed by no verify step; completion_tokens / spec_verify_ct
        "accept_length_request": (out_tokens - requests) / verify if verify else None,
    }


def bench_result(
    cfg: SpecConfig,
    *,
    sets: Sequence[str],
    contexts: Sequence[int],
    concurrency: Sequence[int],
    runs: int,
    output_tokens: int = 256,
    requests_per_cell: int | None = None,
    seed: int = 0,
    tp_size: int = 8,
    profile: str = "ct200",
) -> dict:
    """A benchmark result as spec_gate writes it (the keys a sweep reads): every cell, ``runs`` times.

    Each run draws other requests (seed), so runs differ as a real benchmark's do."""
    result_runs = []
    for run_no in range(1, runs + 1):
        cells = [
            bench_cell(
                cfg,
                CellPlan(set_name, ctx, conc),
                requests=requests_per_cell or max(2 * conc, 4),
                output_tokens=output_tokens,
                seed=seed * 1000 + run_no * 10 + index,
                profile=profile,
            )
            for index, set_name in enumerate(sets)
            for ctx in contexts
            for conc in concurrency
        ]
        result_runs.append({"run": run_no, "cells": cells, "eval": None, "finished_at": f"run {run_no}"})
    return {
        "schema": SCHEMA,
        "server": {
            "speculative_algorithm": cfg.algorithm if cfg.enabled else None,
            "speculative_dflash_block_size": cfg.block_size if cfg.enabled else None,
            "tp_size": tp_size,
        },
        "settings": {
            "sets": list(sets),
            "contexts": [{"name": f"ctx{c}", "tokens": c} for c in contexts],
            "concurrency": list(concurrency),
            "output_tokens": output_tokens,
            "runs": runs,
        },
        "runs": result_runs,
    }
