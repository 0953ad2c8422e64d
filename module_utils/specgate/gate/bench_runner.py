"""One benchmark invocation: size prompts against the server's tokenizer, warm up, run the matrix of prompt set x
context length x concurrency (server acceptance flushed before each cell, read after), collect the coding eval's
answers, optionally cross-check cells with SGLang's own benchmark. Returns schema ``specgate.bench/v1`` runs.

The answers' code is never run here: a run's ``eval`` is pending (``code_eval.pending``) until
``code_eval.judge_runs`` runs it in a systemd sandbox, which root starts (library/spec_code_eval.py)."""

from __future__ import annotations

import asyncio
import functools
import os
import pwd
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeVar

from ansible.module_utils.specgate.gate import code_eval
from ansible.module_utils.specgate.gate.bench_cells import (
    counter_delta,
    server_acceptance,
    summarize_cell,
    summarize_sets,
)
from ansible.module_utils.specgate.gate.bench_client import GENERATION_TOKENS, BenchError, Client, RequestRecord
from ansible.module_utils.specgate.gate.bench_progress import BenchProgress
from ansible.module_utils.specgate.gate.bench_prompts import (
    BUILTIN_SETS,
    NATIVE_CONTEXT,
    USER_SET,
    Prompt,
    build_prompt,
)
from ansible.module_utils.specgate.gate.coding_problems import Problem, select_problems
from ansible.module_utils.specgate.gate.sglang_crosscheck import run_crosscheck

SCHEMA = "specgate.bench/v1"
CALIBRATION_TOKENS = 1024

T = TypeVar("T")


@dataclass
class BenchSettings:
    port: int
    api_key: str | None = None
    sets: Sequence[str] = BUILTIN_SETS
    user_prompts: Sequence[Prompt] = ()
    contexts: Sequence[tuple[str, int]] = (("short", 512), ("long", 8192))
    concurrency: Sequence[int] = (1, 4, 16, 64, 256)
    output_tokens: int = 256
    requests_per_concurrency: int = 2
    min_requests: int = 8
    warmup_requests: int = 4
    seed: int = 1234
    temperature: float = 0.0
    ignore_eos: bool = True
    request_timeout_s: float = 600.0
    runs: int = 1
    eval: bool = True
    eval_problems: Sequence[str] = ()
    eval_max_tokens: int = 1024
    eval_concurrency: int = 8
    crosscheck: bool = False
    crosscheck_python: str = ""
    host: str = "127.0.0.1"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def validate(s: BenchSettings) -> None:
    """Refuse settings that cannot run, naming the variable and the fix."""
    unknown = [name for name in s.sets if name not in (*BUILTIN_SETS, USER_SET)]
    if unknown:
        raise BenchError(
            f"spec_gate_bench_sets has unknown sets {', '.join(unknown)}; use {', '.join(BUILTIN_SETS)} "
            f"and '{USER_SET}' (with spec_gate_bench_user_prompts)"
        )
    if not s.sets:
        raise BenchError("spec_gate_bench_sets is empty: name at least one prompt set, e.g. [code, math, chat]")
    if USER_SET in s.sets and not s.user_prompts:
        raise BenchError(
            "spec_gate_bench_sets includes 'user' but spec_gate_bench_user_prompts names no JSONL file of prompts"
        )
    if not s.concurrency or any(c < 1 for c in s.concurrency):
        raise BenchError(
            f"spec_gate_bench_concurrency must be a non-empty list of integers >= 1, got {list(s.concurrency)}"
        )
    if len(set(s.sets)) != len(s.sets):
        raise BenchError(f"spec_gate_bench_sets lists a set twice: {list(s.sets)}")
    names = [name for name, _ in s.contexts]
    if not s.contexts or len(set(names)) != len(names) or any(tokens < 1 for _, tokens in s.contexts):
        raise BenchError(
            "spec_gate_bench_contexts must be a non-empty list of {name, tokens} with unique names and tokens >= 1, "
            f"got {list(s.contexts)}"
        )
    if NATIVE_CONTEXT in names:
        raise BenchError(
            f"spec_gate_bench_contexts may not use the name '{NATIVE_CONTEXT}' (reserved for the user set)"
        )
    if s.output_tokens < 1:
        raise BenchError(f"spec_gate_bench_output_tokens must be >= 1, got {s.output_tokens}")
    if s.runs < 1:
        raise BenchError(f"the number of runs must be >= 1, got {s.runs}")
    if s.crosscheck and not s.crosscheck_python:
        raise BenchError("spec_gate_bench_crosscheck needs the host venv's Python (fact specgate_sglang_env.python)")
    select_problems(list(s.eval_problems) or None)


def requests_for(s: BenchSettings, concurrency: int) -> int:
    return max(s.min_requests, concurrency * s.requests_per_concurrency)


def cell_count(s: BenchSettings) -> int:
    """Cells in the whole benchmark: every run covers prompt sets x contexts (the user set: its own) x concurrencies."""
    per_run = sum(1 if name == USER_SET else len(s.contexts) for name in s.sets) * len(s.concurrency)
    return per_run * s.runs


def cell_label(set_name: str, context: str, context_tokens: int, concurrency: int) -> str:
    """How a cell is named in errors: the coordinates the report's tables use."""
    size = f" ({context_tokens} tokens)" if context_tokens else ""
    return f"set {set_name}, context {context}{size}, concurrency {concurrency}"


async def _during(what: str, work: Awaitable[T]) -> T:
    """Await ``work``; a BenchError from it says which part of the benchmark it stopped."""
    try:
        return await work
    except BenchError as exc:
        raise BenchError(f"{what}: {exc}") from exc


async def _calibrate(client: Client, set_name: str, seed: int) -> float:
    """Characters per token of this set's text under the server's tokenizer."""
    probe = build_prompt(set_name, 10**6, CALIBRATION_TOKENS, seed, 4.0).text
    return len(probe) / await client.prompt_tokens(probe)


async def run_requests(
    client: Client, prompts: Sequence[Prompt], concurrency: int, s: BenchSettings
) -> tuple[list[RequestRecord], float, float]:
    """Closed loop with ``concurrency`` requests in flight; (records, wall seconds, client CPU seconds)."""
    queue = list(reversed(prompts))
    records: list[RequestRecord] = []
    broken: list[BenchError] = []

    async def worker() -> None:
        while queue and not broken:
            p = queue.pop()
            try:
                record = await client.generate_stream(
                    p.text, p.max_tokens or s.output_tokens, s.temperature, s.ignore_eos
                )
            except BenchError as exc:
                # The cell is void: send nothing more, let the requests in flight end (no task outlives the
                # gather), then report the first error.
                broken.append(exc)
                return
            records.append(record)

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(prompts)))))
    if broken:
        raise broken[0]
    return records, time.perf_counter() - t0, time.process_time() - cpu0


async def run_cell(client: Client, prompts: Sequence[Prompt], concurrency: int, s: BenchSettings) -> dict:
    await client.flush_cache()
    counters_before = await client.server_counters()
    records, duration, cpu = await run_requests(client, prompts, concurrency, s)
    info = await client.server_info()
    counters_after = await client.server_counters()
    server_tokens = counter_delta(counters_before, counters_after, GENERATION_TOKENS)
    acceptance = server_acceptance(info, counters_before, counters_after)  # /server_info's average lags: see there
    summary = summarize_cell(records, duration, acceptance["accept_length_server"], server_tokens, cpu)
    summary.update(acceptance)
    if not summary["completed"]:
        raise BenchError(f"every request of the cell failed; first errors: {summary['errors']}")
    return summary


def _prompts_for(s: BenchSettings, set_name: str, tokens: int, count: int, *, cpt: float, offset: int) -> list[Prompt]:
    if set_name == USER_SET:
        return [s.user_prompts[(offset + i) % len(s.user_prompts)] for i in range(count)]
    return [build_prompt(set_name, offset + i, tokens, s.seed, cpt) for i in range(count)]


async def run_eval(client: Client, model: str, s: BenchSettings) -> dict:
    """The eval's answers, pending: generated here, judged (their code run) only in the sandbox."""
    problems = select_problems(list(s.eval_problems) or None)
    sem = asyncio.Semaphore(s.eval_concurrency)

    async def one(problem: Problem) -> dict:
        async with sem:
            answer, finish = await client.chat(model, problem.prompt, s.eval_max_tokens)
        return {"name": problem.name, "answer": answer, "finish_reason": finish}

    # Every problem ends before an error is raised, so no request outlives the client session.
    results = await asyncio.gather(*(one(p) for p in problems), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return code_eval.pending(results)


async def _crosscheck(s: BenchSettings, context: str, tokens: int, concurrency: int) -> dict:
    result = await asyncio.to_thread(
        functools.partial(
            run_crosscheck,
            python=s.crosscheck_python,
            port=s.port,
            api_key=s.api_key,
            context_tokens=tokens,
            concurrency=concurrency,
            num_prompts=requests_for(s, concurrency),
            output_tokens=s.output_tokens,
            seed=s.seed,
            timeout_s=s.request_timeout_s,
        )
    )
    return {"context": context, "concurrency": concurrency, "sglang": result}


def _server_summary(info: dict) -> dict:
    keys = (
        "model_path",
        "revision",
        "served_model_name",
        "speculative_algorithm",
        "speculative_num_draft_tokens",
        "speculative_dflash_block_size",
        "speculative_eagle_topk",
        "speculative_num_steps",
        "tp_size",
        "version",
    )
    return {k: info.get(k) for k in keys if k in info}


async def run_benchmark(s: BenchSettings, progress: BenchProgress | None = None) -> dict:
    validate(s)
    progress = progress or BenchProgress(cell_count(s), s.runs)
    async with Client(s.base_url, s.api_key, s.request_timeout_s) as client:
        info = await client.server_info()
        model = info.get("served_model_name") or info.get("model_path") or "default"
        progress.step("sizing the prompts against the server's tokenizer")
        cpt = {
            name: await _during(f"sizing the prompts of set {name}", _calibrate(client, name, s.seed))
            for name in s.sets
            if name != USER_SET
        }
        if s.warmup_requests:
            first = next(iter(cpt), USER_SET)
            warm = _prompts_for(s, first, s.contexts[0][1], s.warmup_requests, cpt=cpt.get(first, 4.0), offset=10**7)
            progress.step("warm-up")
            await _during("warm-up", run_requests(client, warm, min(4, len(warm)), s))
        runs = []
        for run_no in range(1, s.runs + 1):
            started = datetime.now(timezone.utc)
            cells = []
            for set_name in s.sets:
                contexts = [(NATIVE_CONTEXT, 0)] if set_name == USER_SET else list(s.contexts)
                for ctx_name, ctx_tokens in contexts:
                    for conc in s.concurrency:
                        n = requests_for(s, conc)
                        # Fresh prompts per run and cell: the prefix cache must not carry over between them.
                        offset = run_no * 10**5 + conc * 1000
                        prompts = _prompts_for(s, set_name, ctx_tokens, n, cpt=cpt.get(set_name, 4.0), offset=offset)
                        where = f"run {run_no}, cell {cell_label(set_name, ctx_name, ctx_tokens, conc)}"
                        progress.cell(f"run {run_no} of {s.runs}, {cell_label(set_name, ctx_name, ctx_tokens, conc)}")
                        cell = await _during(
                            where,
                            run_cell(client, prompts, conc, s),
                        )
                        cells.append(
                            {
                                "set": set_name,
                                "context": ctx_name,
                                "context_tokens": ctx_tokens or None,
                                "concurrency": conc,
                                **cell,
                            }
                        )
            progress.cell_done()
            if s.eval:
                progress.step(f"run {run_no} of {s.runs}, coding eval")
            run = {
                "run": run_no,
                "started_at": started.isoformat(timespec="seconds"),
                "cells": cells,
                "sets": summarize_sets(cells),
                "eval": await _during(f"run {run_no}, coding eval", run_eval(client, model, s)) if s.eval else None,
            }
            if s.crosscheck and run_no == 1:
                progress.step("SGLang's own benchmark on each context and concurrency (cross-check)")
                run["crosscheck"] = [
                    await _during(
                        f"SGLang's benchmark on context {name} ({tokens} tokens), concurrency {conc}",
                        _crosscheck(s, name, tokens, conc),
                    )
                    for name, tokens in s.contexts
                    for conc in s.concurrency
                ]
            run["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            runs.append(run)
    return {
        "schema": SCHEMA,
        "server": _server_summary(info),
        # Who ran it: the gate runs the benchmark as the service user (its answers' code runs in a sandbox).
        "runner": {"user": pwd.getpwuid(os.geteuid()).pw_name, "uid": os.geteuid()},
        "settings": {
            "sets": list(s.sets),
            "contexts": [{"name": n, "tokens": t} for n, t in s.contexts],
            "concurrency": list(s.concurrency),
            "output_tokens": s.output_tokens,
            "seed": s.seed,
            "temperature": s.temperature,
            "warmup_requests": s.warmup_requests,
            "chars_per_token": cpt,
        },
        "runs": runs,
    }
