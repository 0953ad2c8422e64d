#!/usr/bin/env python3
"""Prove spec_bench's client is not the bottleneck: run it against the sim on loopback at C = 1 … 256 and print
its measured output tok/s beside the server's own token count (sglang:generation_tokens_total over the same
window), the deviation, and the client's CPU per output token and share of one core; then run SGLang's own client
(``sglang.benchmark.serving``, backend sglang: streaming /generate, as spec_bench) on the same server with the same
prompt length, output length, request count and concurrency, and print its CPU per output token beside.

    .venv/bin/python scripts/bench_client.py [--levels 1,4,16,64,256] [--output-tokens 256] [--time-scale 0.02]
        [--sglang-python .venv-sglang/bin/python --sglang-path .venv-sglang/versions/0.5.23]

CPU per output token is measured the same way for both: the client process's CPU time (time.process_time) from
the first measured request sent to the last one answered, over the output tokens those requests received. For
SGLang's client that window is taken inside its process, around its request function (warm-up request excluded),
so its dataset generation, tokenizer loading and final retokenizing are not counted: "the request loop". SGLang's
client needs a venv with SGLang and the `datasets` package its benchmark imports (`scripts/setup_sglang_resolver_venv
0.5.23` builds one, .venv-sglang by default, then `.venv-sglang/bin/pip install datasets`); without one the
comparison is skipped and said so. Its "retokenized / server" column is its output text retokenized with the model's
tokenizer over the server's own count (1.00: the sim counts with the model's tokenizer, as SGLang does).

The sim's time scale shrinks its simulated step times so it can produce far more tokens per second than a real
server; what limits the numbers then is CPU (the sim and the client share this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The project's collection: its paths module puts module_utils on ansible.module_utils' path.
sys.path.insert(0, str(ROOT / "local_collections"))
sys.path.insert(0, str(ROOT / "sim"))

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path
from ansible.module_utils.specgate.gate import bench_client  # noqa: E402 - needs the path wiring above
from ansible.module_utils.specgate.gate.bench_client import Client  # noqa: E402 - needs the path wiring above
from ansible.module_utils.specgate.gate.bench_prompts import build_prompt  # noqa: E402 - needs the path wiring above
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, run_requests  # noqa: E402 - same
from specgate_sim import testing  # noqa: E402 - the sim package lives in sim/, wired above

KEY = "bench-client-key"
WARMUP_REQUESTS = 1

# Runs in SGLang's venv: sglang.benchmark.serving's own CLI, its request function for backend "sglang" wrapped to
# read this process's CPU time from the first measured request sent to the last answered (warm-up excluded).
SGLANG_WRAPPER = r"""
import json, sys, time
import sglang.benchmark.serving as serving

out_path, warmup = sys.argv[1], int(sys.argv[2])
inner = serving.ASYNC_REQUEST_FUNCS["sglang"]
state = {"calls": 0, "cpu0": None, "cpu1": None, "wall0": None, "wall1": None, "tokens": 0, "ok": 0, "failed": 0}


async def timed(request_func_input, pbar=None):
    state["calls"] += 1
    measured = state["calls"] > warmup
    if measured and state["cpu0"] is None:
        state["cpu0"], state["wall0"] = time.process_time(), time.perf_counter()
    output = await inner(request_func_input=request_func_input, pbar=pbar)
    if measured:
        state["cpu1"], state["wall1"] = time.process_time(), time.perf_counter()
        if output.success:
            state["ok"] += 1
            state["tokens"] += int(output.output_len or 0)
        else:
            state["failed"] += 1
    return output


serving.ASYNC_REQUEST_FUNCS["sglang"] = timed
sys.argv = ["sglang.benchmark.serving", *sys.argv[3:]]
serving.cli_main()
with open(out_path, "w") as f:
    json.dump(state, f)
"""


async def measure(port: int, level: int, output_tokens: int, context: int) -> dict:
    """spec_bench's client at one level: its tok/s beside the server's own count, and its CPU per output token."""
    s = BenchSettings(port=port, api_key=KEY, output_tokens=output_tokens)
    async with Client(s.base_url, KEY, 600) as client:
        warm = [build_prompt("chat", 10**6 + i, context, 1, 4.0) for i in range(4)]
        await run_requests(client, warm, 4, s)
        # characters per token under the server's tokenizer, so prompts come out at ``context`` tokens
        probe = build_prompt("chat", 10**7, context, 1, 4.0).text
        cpt = len(probe) / await client.prompt_tokens(probe)
        prompts = [build_prompt("chat", level * 1000 + i, context, 1, cpt) for i in range(requests_for(level))]
        before = await client.generation_tokens()
        records, wall, cpu = await run_requests(client, prompts, level, s)
        after = await client.generation_tokens()
    client_tokens = sum(r.completion_tokens for r in records if r.ok)
    server_tokens = after - before
    return {
        "requests": len(records),
        "failed": sum(1 for r in records if not r.ok),
        "client_tok_s": client_tokens / wall,
        "server_tok_s": server_tokens / wall,
        "deviation_pct": 100.0 * (client_tokens - server_tokens) / server_tokens,
        "cpu_us_per_token": 1e6 * cpu / max(client_tokens, 1),
        "cpu_share": cpu / wall,
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in records) / max(len(records), 1),
    }


def requests_for(level: int) -> int:
    return max(64, 2 * level)


def sglang_client(python: str, path: str | None, port: int, level: int, *, output_tokens: int, context: int) -> dict:
    """SGLang's client at one level against the same server: its CPU per output token in its request loop."""
    with tempfile.TemporaryDirectory(prefix="specgate-sglang-client-") as work:
        out = Path(work) / "cpu.json"
        wrapper = Path(work) / "wrapper.py"
        wrapper.write_text(SGLANG_WRAPPER)
        cmd = [
            python, str(wrapper), str(out), str(WARMUP_REQUESTS),
            "--backend", "sglang", "--host", "127.0.0.1", "--port", str(port),
            "--dataset-name", "random-ids", "--random-input-len", str(context),
            "--random-output-len", str(output_tokens), "--random-range-ratio", "1.0",
            "--num-prompts", str(requests_for(level)), "--max-concurrency", str(level),
            "--warmup-requests", str(WARMUP_REQUESTS), "--flush-cache", "--disable-tqdm",
            "--output-file", str(Path(work) / "result.jsonl"),
        ]  # fmt: skip
        loopback = "127.0.0.1,localhost"  # SGLang's client honours http_proxy; loopback must not go through one
        env = {**os.environ, "OPENAI_API_KEY": KEY, "no_proxy": loopback, "NO_PROXY": loopback}
        if path:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0 or not out.is_file():
            tail = (proc.stderr or proc.stdout)[-800:]
            raise RuntimeError(f"sglang.benchmark.serving exited {proc.returncode}: {tail}")
        state = json.loads(out.read_text())
        result = json.loads((Path(work) / "result.jsonl").read_text().splitlines()[-1])
    cpu = state["cpu1"] - state["cpu0"]
    wall = state["wall1"] - state["wall0"]
    return {
        "requests": state["ok"] + state["failed"],
        "failed": state["failed"],
        "tokens": state["tokens"],
        "tok_s": state["tokens"] / wall,
        "cpu_us_per_token": 1e6 * cpu / max(state["tokens"], 1),
        "cpu_share": cpu / wall,
        "prompt_tokens": result.get("total_input_tokens", 0) / max(result.get("completed") or 1, 1),
        # its output text retokenized with the model's tokenizer, over the server's count: 1 when they agree
        "retokenized_ratio": result.get("total_output_tokens_retokenized", 0)
        / max(result.get("total_output_tokens") or 1, 1),
    }


def median_row(runs: list[dict]) -> dict:
    """Each number's median over the runs."""
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def default_sglang() -> tuple[str | None, str | None]:
    """The resolver venv scripts/setup_sglang_resolver_venv builds, if it is there with 0.5.23."""
    venv = Path(os.environ.get("SPECGATE_SGLANG_VENV", ROOT / ".venv-sglang"))
    python, version = venv / "bin" / "python", venv / "versions" / "0.5.23"
    if python.is_file() and (version / ".specgate-complete").is_file():
        return str(python), str(version)
    return None, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,4,16,64,256")
    parser.add_argument("--output-tokens", type=int, default=256)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--time-scale", type=float, default=0.02)
    parser.add_argument("--sglang-python", help="a Python with SGLang (default: .venv-sglang's, when present)")
    parser.add_argument("--sglang-path", help="prepended to PYTHONPATH for it (a resolver venv's versions/<X>)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per client and level, medians compared")
    parser.add_argument("--max-cpu-ratio", type=float, default=1.0, help="goal: spec_bench CPU / SGLang's CPU")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    sglang_python, sglang_path = args.sglang_python, args.sglang_path
    if sglang_python is None:
        sglang_python, sglang_path = default_sglang()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="specgate-bench-client-") as tmp:
        root = Path(tmp)
        target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG)  # with the fixture tokenizer
        drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8))
        argv = f"--model-path {target} --speculative-algorithm DFLASH --speculative-draft-model-path {drafter}"
        argv += f" --max-running-requests {max(levels)} --enable-metrics --api-key {KEY}"
        sim = testing.start(argv.split(), log_path=root / "sim.log", time_scale=args.time_scale)
        try:
            sim.wait_ready(timeout=60)
            rows = []
            for level in levels:
                # the two clients take turns, each ``repeats`` times; the medians are compared (this machine is shared)
                ours, theirs = [], []
                for _ in range(args.repeats):
                    ours.append(asyncio.run(measure(sim.port, level, args.output_tokens, args.context)))
                    if sglang_python:
                        theirs.append(
                            sglang_client(
                                sglang_python, sglang_path, sim.port, level,
                                output_tokens=args.output_tokens, context=args.context,
                            )
                        )  # fmt: skip
                row = {"C": level, **median_row(ours), "failed": sum(r["failed"] for r in ours + theirs)}
                row["deviation_pct"] = max((r["deviation_pct"] for r in ours), key=abs)
                if theirs:
                    row["sglang"] = median_row(theirs)
                rows.append(row)
        finally:
            sim.stop()
    json_parser = "orjson" if bench_client._loads is not json.loads else "stdlib json"
    print(
        f"sim time scale {args.time_scale}, {args.output_tokens} output tokens/request, context {args.context}, "
        f"medians of {args.repeats} runs per client; "
        f"spec_bench reads each event's token count without parsing, the last meta_info with {json_parser}; "
        f"allocator thresholds {'set' if bench_client.keep_read_buffers_in_heap() else 'not settable here'}"
    )
    print(
        "|   C | requests | client tok/s | server tok/s | deviation % | prompt tok | client CPU µs/tok "
        "| client CPU share | SGLang client tok/s | SGLang prompt tok | SGLang retokenized / server "
        "| SGLang CPU µs/tok | CPU ratio |"
    )
    print(
        "|----:|---------:|-------------:|-------------:|------------:|-----------:|------------------:"
        "|-----------------:|--------------------:|------------------:|--------------------------:"
        "|------------------:|----------:|"
    )
    for r in rows:
        sg = r.get("sglang")
        theirs = (
            f"{sg['tok_s']:>19.0f} | {sg['prompt_tokens']:>17.0f} | {sg['retokenized_ratio']:>26.2f} "
            f"| {sg['cpu_us_per_token']:>17.1f} "
            f"| {r['cpu_us_per_token'] / sg['cpu_us_per_token']:>8.2f}x"
            if sg
            else f"{'—':>19} | {'—':>17} | {'—':>26} | {'—':>17} | {'—':>9}"
        )
        print(
            f"| {r['C']:>3} | {r['requests']:>8} | {r['client_tok_s']:>12.0f} | {r['server_tok_s']:>12.0f} "
            f"| {r['deviation_pct']:>+11.2f} | {r['prompt_tokens']:>10.0f} | {r['cpu_us_per_token']:>17.1f} "
            f"| {r['cpu_share']:>16.2f} | {theirs} |"
        )
    print(f"total {time.perf_counter() - started:.1f} s")
    if not sglang_python:
        print("SGLang's client not run: no SGLang venv (scripts/setup_sglang_resolver_venv 0.5.23, or --sglang-python)")
    worst = max(abs(r["deviation_pct"]) for r in rows)
    failed = sum(r["failed"] for r in rows)
    ratios = [r["cpu_us_per_token"] / r["sglang"]["cpu_us_per_token"] for r in rows if "sglang" in r]
    if failed or worst > 2.0 or (ratios and max(ratios) > args.max_cpu_ratio):
        print(
            f"FAIL: {failed} failed requests, worst deviation {worst:.2f} % (goal within ±2 %), "
            f"worst CPU ratio {max(ratios, default=0):.2f} (goal ≤ {args.max_cpu_ratio:g})"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
