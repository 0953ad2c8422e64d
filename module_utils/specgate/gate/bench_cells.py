"""Pure summaries: the numbers of one benchmark cell from its request records, and of one prompt set over its
cells. No I/O here, so every number in the report has a unit test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible.module_utils.specgate.gate.bench_client import GENERATION_TOKENS, SPEC_VERIFY_CALLS, RequestRecord
from ansible.module_utils.specgate.gate.bench_stats import percentile, summarize_latencies

MAX_ERRORS_KEPT = 3


def summarize_cell(
    records: Sequence[RequestRecord],
    duration_s: float,
    server_accept_length: float | None,
    server_tokens: float | None,
    client_cpu_s: float | None = None,
) -> dict:
    """Numbers of one cell. Throughput divides by the cell's wall time (first request sent to last answer
    received), as SGLang's benchmark does."""
    ok = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    out_tokens = sum(r.completion_tokens for r in ok)
    requested = sum(r.requested_tokens for r in ok)
    verify = [r for r in ok if r.verify_ct]
    verify_steps = sum(r.verify_ct or 0 for r in verify)
    verify_tokens = sum(r.completion_tokens for r in verify)
    per_request_accept = [r.accept_length for r in verify if r.accept_length is not None]
    prompt_tokens = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    itl = [gap for r in ok for gap in r.itl]
    tpot = [(r.latency - r.ttft) / (r.completion_tokens - 1) for r in ok if r.completion_tokens > 1 and r.ttft]
    return {
        "requests": len(records),
        "completed": len(ok),
        "failed": len(failed),
        "errors": [r.error for r in failed[:MAX_ERRORS_KEPT]],
        "duration_s": duration_s,
        "output_tokens": out_tokens,
        "output_tok_s": (out_tokens / duration_s) if ok and duration_s > 0 else None,
        "request_per_s": (len(ok) / duration_s) if ok and duration_s > 0 else None,
        "ttft": summarize_latencies([r.ttft for r in ok if r.ttft is not None]),
        "itl": summarize_latencies(itl),
        "tpot": summarize_latencies(tpot),
        # Token-weighted (tokens over verify steps), as the server counts it; per-request spread beside it.
        "accept_length_request": (verify_tokens / verify_steps) if verify_steps else None,
        "accept_length_request_p10": percentile(per_request_accept, 10),
        "accept_length_request_p50": percentile(per_request_accept, 50),
        "accept_length_server": server_accept_length,
        "verify_steps": verify_steps,
        "tokens": {
            "output_requested": requested,
            "output_received": out_tokens,
            "short_requests": sum(1 for r in ok if r.completion_tokens < r.requested_tokens),
            "prompt_mean_received": (sum(prompt_tokens) / len(prompt_tokens)) if prompt_tokens else None,
            "server_counted": server_tokens,
        },
        "client_cpu_s": client_cpu_s,
    }


def summarize_sets(cells: Sequence[Mapping]) -> dict[str, dict]:
    """Acceptance per prompt set over all its cells: request-side token-weighted over every verify step;
    server-side weighted by each cell's output tokens (the server average is per cell after a flush)."""
    out: dict[str, dict] = {}
    for cell in cells:
        s = out.setdefault(
            cell["set"], {"_tokens": 0, "_steps": 0, "_server_weighted": 0.0, "_server_tokens": 0, "output_tokens": 0}
        )
        if cell.get("verify_steps") and cell.get("accept_length_request"):
            s["_steps"] += cell["verify_steps"]
            s["_tokens"] += cell["accept_length_request"] * cell["verify_steps"]
        if cell.get("accept_length_server") is not None and cell.get("output_tokens"):
            s["_server_weighted"] += cell["accept_length_server"] * cell["output_tokens"]
            s["_server_tokens"] += cell["output_tokens"]
        s["output_tokens"] += cell.get("output_tokens") or 0
    for s in out.values():
        steps, tokens = s.pop("_steps"), s.pop("_tokens")
        weighted, server_tokens = s.pop("_server_weighted"), s.pop("_server_tokens")
        s["accept_length_request"] = (tokens / steps) if steps else None
        s["accept_length_server"] = (weighted / server_tokens) if server_tokens else None
    return out


def server_accept_length(server_info: Mapping) -> float | None:
    """The server's average acceptance length over its schedulers (one per data-parallel rank)."""
    values = [
        float(state["avg_spec_accept_length"])
        for state in server_info.get("internal_states") or []
        if isinstance(state, Mapping) and state.get("avg_spec_accept_length") is not None
    ]
    return (sum(values) / len(values)) if values else None


def counter_delta(before: Mapping | None, after: Mapping | None, name: str) -> float | None:
    """How much the server's counter ``name`` grew over a cell; None where /metrics was not read or lacks it. A
    labelled counter has no sample until it first counts, so one that appears during the cell started at 0."""
    if before is None or after is None or name not in after:
        return None
    return float(after[name]) - float(before.get(name, 0.0))


def server_acceptance(server_info: Mapping, before: Mapping | None, after: Mapping | None) -> dict:
    """The server's own acceptance length over one cell (flush, run, read), and where it comes from.

    "metrics": sglang:generation_tokens_total over sglang:spec_verify_calls_total, their growth over the cell. SGLang
    bumps both as each request finishes, so they cover exactly the cell's requests, with no lag: tokens per verify
    step, bonus token and first (prefill) token included, the definition of the request-side figure, counted by
    the server instead of read from its answers.
    "server_info": /server_info's avg_spec_accept_length, only where /metrics is not read. SGLang folds its
    speculative counters into that average only every decode_log_interval decode batches (40 by default;
    scheduler_components/metrics_reporter.py::report_decode_stats), and a flush restarts the count: read after a
    cell it covers the cell's first floor(D / interval) * interval decode batches (D: the cell's decode batches,
    each request's prefill token left out) and is absent when D < interval, e.g. a C=8 cell of 8 x 48 tokens.
    """
    reported = server_accept_length(server_info)
    tokens = counter_delta(before, after, GENERATION_TOKENS)
    verifies = counter_delta(before, after, SPEC_VERIFY_CALLS)
    if tokens and verifies:
        value, source = tokens / verifies, "metrics"
    elif reported is not None:
        value, source = reported, "server_info"
    else:
        value, source = None, None
    return {
        "accept_length_server": value,
        "accept_length_server_source": source,
        "accept_length_server_info": reported,
        "server_decode_log_interval": server_info.get("decode_log_interval"),
    }
