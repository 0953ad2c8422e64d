"""Markdown for people: the benchmark matrix (mean over runs per cell), acceptance per prompt set, the coding
eval, the SGLang cross-check, and the gate table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return (sum(present) / len(present)) if present else None


def _cells_by_key(runs: Sequence[Mapping]) -> dict[tuple, list[Mapping]]:
    grouped: dict[tuple, list[Mapping]] = {}
    for run in runs:
        for cell in run["cells"]:
            grouped.setdefault((cell["set"], cell["context"], cell["concurrency"]), []).append(cell)
    return grouped


def _lat(cells: Sequence[Mapping], key: str) -> str:
    return " / ".join(_num(_mean([c[key][q] for c in cells])) for q in ("p50_ms", "p90_ms", "p99_ms"))


def bench_markdown(result: Mapping) -> str:
    runs = result["runs"]
    server = result["server"]
    lines = [
        f"Benchmark ({result['schema']}), {len(runs)} run(s); server: "
        f"{server.get('speculative_algorithm') or 'no speculation'}, model {server.get('model_path')}",
        "",
        "| set | context | C | output tok/s | req/s | TTFT p50/p90/p99 ms | ITL p50/p90/p99 ms "
        "| accept len (request / server) | output tokens received / requested |",
        "|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for (set_name, context, conc), cells in _cells_by_key(runs).items():
        received = sum(c["tokens"]["output_received"] for c in cells)
        requested = sum(c["tokens"]["output_requested"] for c in cells)
        lines.append(
            f"| {set_name} | {context} | {conc} | {_num(_mean([c['output_tok_s'] for c in cells]))} "
            f"| {_num(_mean([c['request_per_s'] for c in cells]), 2)} | {_lat(cells, 'ttft')} | {_lat(cells, 'itl')} "
            f"| {_num(_mean([c['accept_length_request'] for c in cells]), 2)} / "
            f"{_num(_mean([c['accept_length_server'] for c in cells]), 2)} | {received} / {requested} |"
        )
    set_names = list(dict.fromkeys(name for run in runs for name in run["sets"]))
    lines += ["", "| prompt set | accept len (request) | accept len (server) |", "|---|---:|---:|"]
    for name in set_names:
        req = _mean([run["sets"][name]["accept_length_request"] for run in runs if name in run["sets"]])
        srv = _mean([run["sets"][name]["accept_length_server"] for run in runs if name in run["sets"]])
        lines.append(f"| {name} | {_num(req, 2)} | {_num(srv, 2)} |")
    evals = [run["eval"] for run in runs if run.get("eval")]
    if evals:
        passed = ", ".join(f"{e['passed']}/{e['problems']}" for e in evals)
        failing = sorted(
            {r["name"] + " (" + r["outcome"] + ")" for e in evals for r in e["results"] if r["outcome"] != "passed"}
        )
        lines += ["", f"Coding eval: {passed} passed" + (f"; not passing: {', '.join(failing)}" if failing else "")]
    for run in runs:
        for xc in run.get("crosscheck") or []:
            if xc is runs[0]["crosscheck"][0]:
                lines += [
                    "",
                    "SGLang's own benchmark (sglang.benchmark.serving, random-ids) on the same cells:",
                    "",
                    "| context | C | output tok/s | req/s | TTFT p50/p99 ms | ITL p50/p99 ms | accept len |",
                    "|---|---:|---:|---:|---|---|---:|",
                ]
            s = xc["sglang"]
            lines.append(
                f"| {xc['context']} | {xc['concurrency']} | {_num(s.get('output_throughput'))} "
                f"| {_num(s.get('request_throughput'), 2)} "
                f"| {_num(s.get('median_ttft_ms'))} / {_num(s.get('p99_ttft_ms'))} "
                f"| {_num(s.get('median_itl_ms'))} / {_num(s.get('p99_itl_ms'))} | {_num(s.get('accept_length'), 2)} |"
            )
    return "\n".join(lines) + "\n"


def gate_markdown(gate: Mapping) -> str:
    """The gate table: one row per gated metric, then the verdict and what was done."""
    analysis = gate["analysis"]
    lines = [
        f"Gate for release {gate['release']} — {analysis['phase']} after {analysis['runs']} run(s) → {gate['action']}",
        "",
        "| metric | success condition | measurements | mean | CI | phase |",
        "|---|---|---|---:|---|---|",
    ]
    for m in analysis["metrics"]:
        iv = m["interval"]
        ci = f"{_num(iv['low'], 3)} to {_num(iv['high'], 3)}" if iv["low"] is not None else "unbounded (1 run)"
        values = ", ".join(f"{v:.3g}" for v in m["measurements"])
        if m.get("reference_measurements"):
            values += " vs " + ", ".join(f"{v:.3g}" for v in m["reference_measurements"]) + f" ({m['reference']})"
        lines.append(
            f"| {m['description']} | {m['success_condition']} ({m['variable']}) | {values} "
            f"| {_num(iv['mean'], 3)} | {ci} | {m['phase']} |"
        )
    for s in analysis.get("skipped") or []:
        lines.append(f"| {s['name']} | ({s['variable']}) | — | — | — | skipped: {s['reason']} |")
    reference = gate.get("regression_reference")
    if reference:
        when = f", {reference['measured_at']}" if reference.get("measured_at") else ""
        lines += [
            "",
            f"Regression reference: {reference['label']} ({len(reference['runs'])} run(s){when}): {reference['note']}.",
        ]
    if gate.get("message"):
        lines += ["", gate["message"]]
    return "\n".join(lines) + "\n"
