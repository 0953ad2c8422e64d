"""Cross-check a cell with SGLang's own benchmark (``python -m sglang.benchmark.serving``) from the host's venv,
so specgate's numbers sit beside the figures the SGLang community quotes."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from ansible.module_utils.specgate.gate.bench_client import BenchError

# The fields of sglang.benchmark.serving's JSONL result (sglang 0.5.23) that specgate's cell also measures.
KEPT_FIELDS = (
    "completed",
    "duration",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "median_ttft_ms",
    "p90_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "p90_itl_ms",
    "p99_itl_ms",
    "accept_length",
)


def build_command(
    *,
    python: str,
    port: int,
    context_tokens: int,
    concurrency: int,
    num_prompts: int,
    output_tokens: int,
    seed: int,
    output_file: str,
) -> list[str]:
    # random-ids needs no dataset download (plain "random" fetches ShareGPT); range ratio 1 fixes the lengths.
    return [
        python, "-m", "sglang.benchmark.serving",
        "--backend", "sglang",
        "--host", "127.0.0.1",
        "--port", str(port),
        "--dataset-name", "random-ids",
        "--random-input-len", str(context_tokens),
        "--random-output-len", str(output_tokens),
        "--random-range-ratio", "1.0",
        "--num-prompts", str(num_prompts),
        "--max-concurrency", str(concurrency),
        "--seed", str(seed),
        "--flush-cache",
        "--disable-tqdm",
        "--output-file", output_file,
    ]  # fmt: skip


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def loopback_unproxied(env: dict[str, str]) -> dict[str, str]:
    """``env`` with loopback added to no_proxy/NO_PROXY: SGLang's benchmark talks to 127.0.0.1 through clients that
    honour http_proxy (requests, for one), and a proxy set on the host must not catch those requests."""
    for name in ("no_proxy", "NO_PROXY"):
        entries = [entry.strip() for entry in env.get(name, "").split(",") if entry.strip()]
        env[name] = ",".join(entries + [host for host in LOOPBACK_HOSTS if host not in entries])
    return env


def parse_result(jsonl: str) -> dict:
    """The last result line (the tool appends one per run)."""
    lines = [line for line in jsonl.splitlines() if line.strip()]
    if not lines:
        raise BenchError("sglang.benchmark.serving wrote no result line")
    data = json.loads(lines[-1])
    return {key: data.get(key) for key in KEPT_FIELDS}


def run_crosscheck(
    *,
    python: str,
    port: int,
    api_key: str | None,
    context_tokens: int,
    concurrency: int,
    num_prompts: int,
    output_tokens: int,
    seed: int,
    timeout_s: float,
) -> dict:
    with tempfile.TemporaryDirectory(prefix="specgate-xcheck-") as work:
        out = os.path.join(work, "result.jsonl")
        cmd = build_command(
            python=python,
            port=port,
            context_tokens=context_tokens,
            concurrency=concurrency,
            num_prompts=num_prompts,
            output_tokens=output_tokens,
            seed=seed,
            output_file=out,
        )
        env = loopback_unproxied(dict(os.environ))
        env.pop("OPENAI_API_KEY", None)
        if api_key:
            env["OPENAI_API_KEY"] = api_key  # the benchmark sends it as "Authorization: Bearer <key>"
        try:
            proc = subprocess.run(
                cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise BenchError(
                f"sglang.benchmark.serving did not finish within {timeout_s:g} s (spec_gate_bench_request_timeout_s)"
            ) from exc
        except FileNotFoundError as exc:
            raise BenchError(f"spec_gate_bench_crosscheck: the venv Python {python} does not exist") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout)[-600:]
            if "No module named" in tail and "sglang" in tail:
                raise BenchError(
                    "spec_gate_bench_crosscheck needs SGLang's benchmark (sglang.benchmark.serving) in the host venv "
                    f"{python}, which lacks it; install SGLang there or set spec_gate_bench_crosscheck: false"
                )
            raise BenchError(f"sglang.benchmark.serving exited {proc.returncode}: {tail}")
        if not os.path.exists(out):
            raise BenchError("sglang.benchmark.serving wrote no --output-file; output: " + proc.stdout[-300:])
        with open(out, encoding="utf-8") as f:
            return parse_result(f.read())
