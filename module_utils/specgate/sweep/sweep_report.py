"""A sweep's results: one row per config from its benchmark, the winner per use case, and the markdown report.

The use cases are the ones the hand-written sweep report named: per-user speed at C=1 on the shortest
context (chat latency), acceptance on the longest context (long documents), and throughput at the highest
concurrency (batch serving). A config that failed to deploy or benchmark keeps its row with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

USE_CASES = (
    ("latency", "per-user output tok/s at the lowest concurrency, shortest context", "speed_c1_short"),
    ("long_context", "acceptance length (request-side) on the longest context", "accept_long"),
    ("throughput", "output tok/s at the highest concurrency (mean over contexts)", "tok_s_cmax"),
)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return (sum(present) / len(present)) if present else None


def summarize(name: str, release: str, bench: Mapping) -> dict:
    """One config's row from its bench.json (spec_bench's result): means over runs and prompt sets."""
    cells = [cell for run in bench["runs"] for cell in run["cells"] if cell.get("context_tokens")]
    if not cells:
        raise ValueError(f"config {name}: the benchmark has no cell with a context length (user prompt sets only)")
    shortest = min(c["context_tokens"] for c in cells)
    longest = max(c["context_tokens"] for c in cells)
    lowest = min(c["concurrency"] for c in cells)
    highest = max(c["concurrency"] for c in cells)
    evals = [run["eval"] for run in bench["runs"] if run.get("eval")]
    return {
        "name": name,
        "release": release,
        "failed": False,
        "speculative_algorithm": bench["server"].get("speculative_algorithm"),
        "speed_c1_short": _mean(
            [c["output_tok_s"] for c in cells if c["concurrency"] == lowest and c["context_tokens"] == shortest]
        ),
        "accept_long": _mean([c["accept_length_request"] for c in cells if c["context_tokens"] == longest]),
        "tok_s_cmax": _mean([c["output_tok_s"] for c in cells if c["concurrency"] == highest]),
        "ttft_p50_ms_c1_short": _mean(
            [c["ttft"]["p50_ms"] for c in cells if c["concurrency"] == lowest and c["context_tokens"] == shortest]
        ),
        "eval_pass_rate": (sum(e["passed"] for e in evals) / sum(e["problems"] for e in evals)) if evals else None,
        "shape": {"shortest_context": shortest, "longest_context": longest, "concurrency": [lowest, highest]},
    }


def failed_row(name: str, release: str | None, reason: str) -> dict:
    return {"name": name, "release": release or "", "failed": True, "reason": reason}


def winners(rows: Sequence[Mapping]) -> dict[str, dict]:
    """The best config per use case among those that ran; ties go to the earlier config."""
    out: dict[str, dict] = {}
    for key, meaning, metric in USE_CASES:
        ran = [r for r in rows if not r["failed"] and r.get(metric) is not None]
        if not ran:
            out[key] = {"meaning": meaning, "metric": metric, "name": None, "release": None, "value": None}
            continue
        best = max(ran, key=lambda r: r[metric])  # max keeps the first of equal values
        out[key] = {"meaning": meaning, "metric": metric, "name": best["name"], "release": best["release"],
                    "value": best[metric]}  # fmt: skip
    return out


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def sweep_markdown(sweep_id: str, host: str, rows: Sequence[Mapping], best: Mapping[str, Mapping]) -> str:
    lines = [
        f"# Sweep {sweep_id} on {host}",
        "",
        "| use case | winner | release | value |",
        "|---|---|---|---:|",
    ]
    for key, meaning, _metric in USE_CASES:
        win = best[key]
        lines.append(f"| {key}: {meaning} | {win['name'] or '—'} | {win['release'] or '—'} | {_num(win['value'], 2)} |")
    lines += [
        "",
        "| config | release | algorithm | tok/s C=1 short | TTFT p50 ms C=1 short | accept len long | tok/s C max "
        "| coding eval | result |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r["failed"]:
            lines.append(f"| {r['name']} | {r['release'] or '—'} | — | — | — | — | — | — | FAILED: {r['reason']} |")
            continue
        rate = "—" if r["eval_pass_rate"] is None else f"{r['eval_pass_rate']:.0%}"
        lines.append(
            f"| {r['name']} | {r['release']} | {r['speculative_algorithm'] or 'none'} | {_num(r['speed_c1_short'])} "
            f"| {_num(r['ttft_p50_ms_c1_short'])} | {_num(r['accept_long'], 2)} | {_num(r['tok_s_cmax'])} "
            f"| {rate} | ok |"
        )
    return "\n".join(lines) + "\n"
