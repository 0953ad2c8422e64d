#!/usr/bin/env python3
"""Prove spec_bench's client is not the bottleneck: run it against the sim on loopback at C = 1 … 256 and print
its measured output tok/s beside the server's own token count (sglang:generation_tokens_total over the same
window), the deviation, and the client's CPU time per 1k tokens and share of one core.

    .venv/bin/python scripts/bench_client.py [--levels 1,4,16,64,256] [--output-tokens 256] [--time-scale 0.02]

The sim's time scale shrinks its simulated step times so it can produce far more tokens per second than a real
server; what limits the numbers then is CPU (the sim and the client share this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import ansible.module_utils

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
sys.path.insert(0, str(ROOT / "sim"))

from ansible.module_utils.specgate.bench_client import Client  # noqa: E402 - needs the path wiring above
from ansible.module_utils.specgate.bench_prompts import build_prompt  # noqa: E402 - needs the path wiring above
from ansible.module_utils.specgate.bench_runner import BenchSettings, run_requests  # noqa: E402 - same
from specgate_sim import testing  # noqa: E402 - the sim package lives in sim/, wired above

KEY = "bench-client-key"


async def measure(port: int, levels: list[int], output_tokens: int, context: int) -> list[dict]:
    s = BenchSettings(port=port, api_key=KEY, output_tokens=output_tokens)
    rows = []
    async with Client(s.base_url, KEY, 600) as client:
        warm = [build_prompt("chat", 10**6 + i, context, 1, 4.0) for i in range(8)]
        await run_requests(client, warm, 4, s)
        for level in levels:
            prompts = [build_prompt("chat", level * 1000 + i, context, 1, 4.0) for i in range(max(64, 2 * level))]
            before = await client.generation_tokens()
            records, wall, cpu = await run_requests(client, prompts, level, s)
            after = await client.generation_tokens()
            client_tokens = sum(r.completion_tokens for r in records if r.ok)
            server_tokens = after - before
            rows.append(
                {
                    "C": level,
                    "requests": len(records),
                    "failed": sum(1 for r in records if not r.ok),
                    "client_tok_s": client_tokens / wall,
                    "server_tok_s": server_tokens / wall,
                    "deviation_pct": 100.0 * (client_tokens - server_tokens) / server_tokens,
                    "cpu_s_per_1k": 1000.0 * cpu / max(client_tokens, 1),
                    "cpu_share": cpu / wall,
                }
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,4,16,64,256")
    parser.add_argument("--output-tokens", type=int, default=256)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--time-scale", type=float, default=0.02)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="specgate-bench-client-") as tmp:
        root = Path(tmp)
        target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG)
        drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8))
        argv = f"--model-path {target} --speculative-algorithm DFLASH --speculative-draft-model-path {drafter}"
        argv += f" --max-running-requests {max(levels)} --enable-metrics --api-key {KEY}"
        sim = testing.start(argv.split(), log_path=root / "sim.log", time_scale=args.time_scale)
        try:
            sim.wait_ready(timeout=60)
            started = time.perf_counter()
            rows = asyncio.run(measure(sim.port, levels, args.output_tokens, args.context))
        finally:
            sim.stop()
    print(f"sim time scale {args.time_scale}, {args.output_tokens} output tokens/request, context {args.context}")
    print("|   C | requests | client tok/s | server tok/s | deviation % | client CPU s / 1k tok | client CPU share |")
    print("|----:|---------:|-------------:|-------------:|------------:|----------------------:|-----------------:|")
    for r in rows:
        print(
            f"| {r['C']:>3} | {r['requests']:>8} | {r['client_tok_s']:>12.0f} | {r['server_tok_s']:>12.0f} "
            f"| {r['deviation_pct']:>+11.2f} | {r['cpu_s_per_1k']:>21.4f} | {r['cpu_share']:>16.2f} |"
        )
    print(f"total {time.perf_counter() - started:.1f} s")
    worst = max(abs(r["deviation_pct"]) for r in rows)
    failed = sum(r["failed"] for r in rows)
    if failed or worst > 2.0:
        print(f"FAIL: {failed} failed requests, worst deviation {worst:.2f} % (goal within ±2 %)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
