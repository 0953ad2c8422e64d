"""A sweep's results: one row per config from its benchmark, the winner per use case, and the markdown report.

The use cases are the ones the hand-written sweep report named: per-user speed at C=1 on the shortest
context (chat latency), acceptance on the longest context (long documents), and throughput at the highest
concurrency (batch serving). A config that failed to deploy or benchmark keeps its row with the reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from ansible.module_utils.specgate.sweep.pick import DEFAULT_TOLERANCE, pick, score

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
    per_run = {metric: [] for _key, _meaning, metric in USE_CASES}
    for run in bench["runs"]:
        mine = [c for c in run["cells"] if c.get("context_tokens")]
        for metric, value in _use_case_values(mine, shortest, longest, lowest, highest).items():
            if value is not None:
                per_run[metric].append(value)
    gpus = bench["server"].get("tp_size") or 1
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
        "per_run": per_run,
        "cells": _cell_means(cells, gpus),
        "gpus": gpus,
        "bench_complete": bench_complete(bench),
    }


def _use_case_values(cells: Sequence[Mapping], shortest: int, longest: int, lowest: int, highest: int) -> dict:
    return {
        "speed_c1_short": _mean(
            [c["output_tok_s"] for c in cells if c["concurrency"] == lowest and c["context_tokens"] == shortest]
        ),
        "accept_long": _mean([c["accept_length_request"] for c in cells if c["context_tokens"] == longest]),
        "tok_s_cmax": _mean([c["output_tok_s"] for c in cells if c["concurrency"] == highest]),
    }


def repeat_values(row: Mapping, bench: Mapping, metrics: Sequence[str]) -> dict[str, list[float]]:
    """Per metric in ``metrics``, its value in each run of a repeat benchmark (spec_bench's result over the point's
    deciding cells only), judged on the corners of the point's first benchmark (``row['shape']``), not the repeat's."""
    shape = row["shape"]
    lowest, highest = shape["concurrency"]
    out: dict[str, list[float]] = {metric: [] for metric in metrics}
    for run in bench["runs"]:
        cells = [c for c in run["cells"] if c.get("context_tokens")]
        values = _use_case_values(cells, shape["shortest_context"], shape["longest_context"], lowest, highest)
        for metric in metrics:
            if values.get(metric) is None:
                raise ValueError(f"config {row['name']}: the repeat benchmark has no cell deciding {metric}")
            out[metric].append(values[metric])
    return out


def with_repeats(row: Mapping, values: Mapping[str, Sequence[float]]) -> dict:
    """``row`` with more runs of some use case metrics: each metric's runs extended, its mean over all of them, and
    ``repeats`` counting the runs added per metric."""
    out = dict(row)
    per_run = {metric: list(runs) for metric, runs in (row.get("per_run") or {}).items()}
    repeats = dict(row.get("repeats") or {})
    for metric, more in values.items():
        per_run[metric] = per_run.get(metric, []) + [float(v) for v in more]
        repeats[metric] = int(repeats.get(metric, 0)) + len(more)
        out[metric] = statistics.fmean(per_run[metric])
    out["per_run"] = per_run
    out["repeats"] = repeats
    return out


def deciding_cells(row: Mapping, metric: str) -> dict[str, list[int]]:
    """The benchmark matrix's contexts and concurrency levels a use case metric is judged on (its prompt sets are
    all of them): latency on the shortest context at the lowest concurrency, long-context acceptance on the longest
    context at every level, throughput at the highest level on every context."""
    shape = row["shape"]
    lowest, highest = shape["concurrency"]
    contexts = sorted({c["context_tokens"] for c in row.get("cells") or []}) or [shape["shortest_context"],
                                                                                shape["longest_context"]]
    levels = sorted({c["concurrency"] for c in row.get("cells") or []}) or [lowest, highest]
    if metric == "speed_c1_short":
        return {"contexts": [shape["shortest_context"]], "concurrency": [lowest]}
    if metric == "accept_long":
        return {"contexts": [shape["longest_context"]], "concurrency": levels}
    if metric == "tok_s_cmax":
        return {"contexts": contexts, "concurrency": [highest]}
    raise ValueError(f"{metric!r} is not a use case metric ({', '.join(m for _k, _d, m in USE_CASES)})")


def _cell_means(cells: Sequence[Mapping], gpus: int) -> list[dict]:
    """Per prompt set, context and concurrency, the means over runs the plots read."""
    groups: dict[tuple, list[Mapping]] = {}
    for c in cells:
        groups.setdefault((c["set"], c["context_tokens"], c["concurrency"]), []).append(c)
    out = []
    for (set_name, context, concurrency), group in groups.items():
        tok_s = _mean([c.get("output_tok_s") for c in group])
        tpot = _mean([(c.get("tpot") or {}).get("p50_ms") for c in group])
        out.append({"set": set_name, "context_tokens": context, "concurrency": concurrency, "output_tok_s": tok_s,
                    "accept_length_request": _mean([c.get("accept_length_request") for c in group]),
                    # one user's decode speed: 1000 / time per output token (spec_gate's tpot, median request)
                    "per_user_tok_s": (1000.0 / tpot) if tpot else None,
                    "per_gpu_tok_s": (tok_s / gpus) if tok_s is not None else None})  # fmt: skip
    return out


def bench_complete(bench: Mapping) -> bool:
    """Every run finished and holds every cell of the benchmark's matrix (sets x contexts x concurrency)."""
    settings = bench.get("settings") or {}
    expected = len(settings.get("sets", [])) * len(settings.get("contexts", [])) * len(settings.get("concurrency", []))
    runs = bench.get("runs") or []
    wanted_runs = settings.get("runs")
    if not runs or (wanted_runs is not None and len(runs) < wanted_runs):
        return False
    return all(run.get("finished_at") and (not expected or len(run.get("cells", [])) >= expected) for run in runs)


def failed_row(name: str, release: str | None, reason: str, point: Mapping | None = None) -> dict:
    """A config that failed to deploy, start or benchmark: recorded, and the sweep goes on."""
    row = {"name": name, "release": release or "", "failed": True, "status": "failed", "reason": reason}
    if point is not None:
        row["point"] = dict(point)
    return row


REJECTERS = {
    "sglang": "SGLang rejected it",  # its parser, resolver or launcher checks, in the host's venv
    "settings": "specgate's settings check refused it",  # the service role's render for the engine
    "fit": "specgate's GPU fit refused it",  # parallel sizes and attention backends against the host's GPUs
}


def rejected_row(name: str, point: Mapping | None, message: str, by: str = "sglang") -> dict:
    """A point refused before any launch: skipped, with the refusal's message and who refused it (REJECTERS: SGLang
    itself, or specgate's settings check or GPU fit), never launched."""
    if by not in REJECTERS:
        raise ValueError(f"rejected_row: by {by!r} is not one of {', '.join(REJECTERS)}")
    row = {"name": name, "release": "", "failed": True, "status": "rejected", "rejected_by": by,
           "reason": f"{REJECTERS[by]}: {message}"}  # fmt: skip
    if point is not None:
        row["point"] = dict(point)
    return row


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


def _reason_cell(reason: object) -> str:
    """A failed row's reason in its one table cell: the first line, pipes escaped. A reason over several lines (a
    crash's journal tail) ended the table at its first newline and left the journal as loose text under it; the whole
    reason follows the table (## Failed)."""
    lines = str(reason).strip().splitlines() or [""]
    return lines[0].replace("|", "\\|") + (" (the whole reason under Failed, below)" if len(lines) > 1 else "")


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
            lines.append(
                f"| {r['name']} | {r['release'] or '—'} | — | — | — | — | — | — | FAILED: {_reason_cell(r['reason'])} |"
            )
            continue
        rate = "—" if r["eval_pass_rate"] is None else f"{r['eval_pass_rate']:.0%}"
        lines.append(
            f"| {r['name']} | {r['release']} | {r['speculative_algorithm'] or 'none'} | {_num(r['speed_c1_short'])} "
            f"| {_num(r['ttft_p50_ms_c1_short'])} | {_num(r['accept_long'], 2)} | {_num(r['tok_s_cmax'])} "
            f"| {rate} | ok |"
        )
    long_reasons = [r for r in rows if r["failed"] and len(str(r["reason"]).strip().splitlines()) > 1]
    if long_reasons:
        lines += ["", "## Failed", ""]
        for r in long_reasons:
            lines += [f"### {r['name']}", "", "```text", str(r["reason"]).strip(), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _runs_of(row: Mapping, metric: str) -> list[float]:
    runs = (row.get("per_run") or {}).get(metric)
    if runs:
        return list(runs)
    return [row[metric]] if row.get(metric) is not None else []


def current_rows(rows: Sequence[Mapping]) -> list[Mapping]:
    """The rows that stand: the last row of each config (a redo replaces the interrupted one), none still started."""
    latest: dict[str, Mapping] = {}
    for row in rows:
        latest.pop(row["name"], None)  # keep the order in which the rows that stand were written
        latest[row["name"]] = row
    return [r for r in latest.values() if r.get("status") != "started"]


def robust_winners(rows: Sequence[Mapping], tolerance: float = DEFAULT_TOLERANCE) -> dict[str, dict]:
    """Per use case, the cheapest config within ``tolerance`` of the best mean over runs (pick.py); a row's
    ``cost`` (from its grid point) orders the candidates, rows without one count as equally cheap."""
    ran = [r for r in current_rows(rows) if not r.get("failed")]
    means = {metric: {r["name"]: statistics.fmean(_runs_of(r, metric)) for r in ran if _runs_of(r, metric)}
               for _key, _meaning, metric in USE_CASES}  # fmt: skip
    tops = {metric: max(values.values(), default=0.0) for metric, values in means.items()}
    out: dict[str, dict] = {}
    for key, meaning, metric in USE_CASES:
        elsewhere = {r["name"]: sum(means[m].get(r["name"], 0.0) / tops[m]
                                    for m in means if m != metric and tops[m])
                     for r in ran}  # fmt: skip
        chosen = pick(
            {r["name"]: _runs_of(r, metric) for r in ran},
            {r["name"]: tuple(r["cost"]) for r in ran if r.get("cost") is not None},
            tolerance=tolerance,
            elsewhere=elsewhere,
        )
        row = next((r for r in ran if r["name"] == chosen.winner), None)
        out[key] = {"meaning": meaning, "metric": metric, "name": chosen.winner,
                    "release": row["release"] if row else None,
                    "value": means[metric].get(chosen.winner) if chosen.winner else None,
                    "score": chosen.score, "best": chosen.best, "best_score": chosen.best_score,
                    "tolerance": tolerance, "within_tolerance": list(chosen.within_tolerance),
                    "within_noise": list(chosen.within_noise), "ties": list(chosen.ties),
                    "notes": list(chosen.notes)}  # fmt: skip
    return out


def ood_warning(row: Mapping) -> str | None:
    """A point whose block size is not the one its drafter was trained at: past it, the drafter drafts positions it
    never learned (field notes: they gain only a little); short of it, it runs a drafter trained for another block."""
    point, trained = row.get("point") or {}, row.get("trained_block_size")
    block = point.get("block_size")
    if block is None or trained is None or block == trained:
        return None
    if block > trained:
        return (f"block size {block} is past the drafter's trained block size {trained}: out of distribution, "
                "depths past the training gain little")  # fmt: skip
    return (f"block size {block} differs from the drafter's trained block size {trained}: out of distribution, a "
            f"drafter trained at {block} may accept more")  # fmt: skip


def row_drafter(row: Mapping) -> dict | None:
    """The drafter the row's point ran on: what the sweep recorded at its launch, else what its point names."""
    return row.get("drafter") or (row.get("point") or {}).get("drafter") or None


def drafter_line(row: Mapping) -> str | None:
    """"drafter <name> (<repo>@<revision>), trained block size N" for the report; None when the row has neither."""
    drafter, trained = row_drafter(row), row.get("trained_block_size")
    if not drafter and trained is None:
        return None
    drafter = drafter or {}
    source = (f"{drafter['repo']}@{drafter.get('revision') or '?'}" if drafter.get("repo")
              else drafter.get("local_path") or drafter.get("path") or "")  # fmt: skip
    label = drafter.get("name") or source or "the weights stage's"
    said = f"drafter {label}" + (f" ({source})" if source and source != label else "")
    return said + (f", trained block size {trained}" if trained is not None else ", trained block size unknown")


def inventory_snippet(row: Mapping) -> str:
    """The host_vars that deploy this config (its sglang_service_* settings and, if it names one, its drafter: by
    its model_weights_drafters name when it has one)."""
    import yaml  # controller-side only: the report is written on the controller

    values = dict(row.get("vars") or {})
    drafter = (row.get("point") or {}).get("drafter")
    if drafter and drafter.get("name"):
        values["model_weights_drafter"] = drafter["name"]
    elif drafter and drafter.get("repo"):
        values["model_weights_drafter_repo"] = drafter["repo"]
        values["model_weights_drafter_revision"] = drafter.get("revision")
    elif drafter and drafter.get("local_path"):
        values["model_weights_drafter_local_path"] = drafter["local_path"]
    return yaml.safe_dump(values, sort_keys=True, default_flow_style=False).rstrip()


def interval_line(row: Mapping, metric: str) -> str:
    """A config's mean of ``metric`` with its ~95 % interval and runs, and the runs repeated while it served."""
    scored = score(row["name"], _runs_of(row, metric))
    repeated = int((row.get("repeats") or {}).get(metric, 0))
    more = f", {repeated} of them repeated while it served" if repeated else ""
    return f"{row['name']}: {scored.mean:.4g} ± {scored.dispersion:.2g} over {scored.runs} run(s){more}"


def sweep_report_markdown(sweep_id: str, host: str, rows: Sequence[Mapping], best: Mapping[str, Mapping], *,
                          plots: Sequence[str] = (), launches: Mapping | None = None) -> str:  # fmt: skip
    """sweep.md: the winners (robust pick, with ties and noise said), how to deploy each, the rows, the plots.
    ``launches``: {mode, launched, points, pruned: {point: why not launched}, notes: [which neighbours confirm each
    winner, where a crash left a gap]}."""
    lines = [sweep_markdown(sweep_id, host, rows, best).rstrip(), ""]
    if launches:
        lines += [f"Launches: {launches.get('launched')} of {launches.get('points')} grid points "
                  f"({launches.get('mode')} mode).", ""]  # fmt: skip
        lines += [f"- not launched: {point}: {why}" for point, why in (launches.get("pruned") or {}).items()]
        lines += [f"- {note}" for note in launches.get("notes") or []]
        lines.append("")
    by_name = {r["name"]: r for r in rows}
    for key, _meaning, _metric in USE_CASES:
        win = best[key]
        lines.append(f"## {key}: {win['name'] or 'no winner'}")
        for note in win.get("notes", []):
            lines.append(f"- {note}")
        for name in [win["name"], *win.get("within_noise", [])] if win["name"] else []:
            lines.append(f"- {interval_line(by_name[name], _metric)}")
        row = by_name.get(win["name"] or "")
        if row is not None:
            drafter = drafter_line(row)
            if drafter:
                lines.append(f"- {drafter}")
            warning = ood_warning(row)
            if warning:
                lines.append(f"- WARNING: {warning}")
            lines += ["", "```yaml", inventory_snippet(row), "```"]
        lines.append("")
    skipped = [r for r in rows if r.get("status") == "rejected"]
    if skipped:
        lines += ["## Skipped (SGLang rejected the settings; never launched)", ""]
        lines += [f"- {r['name']}: {r.get('reason', '')}" for r in skipped]
        lines.append("")
    if plots:
        lines += ["## Plots", ""]
        lines += [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    return "\n".join(lines).rstrip() + "\n"


def sweep_document(sweep_id: str, host: str, rows: Sequence[Mapping], best: Mapping[str, Mapping], *,
                   plots: Sequence[str] = (), launches: Mapping | None = None) -> dict:  # fmt: skip
    """sweep.json: the rows, the robust winners (with their inventory snippets and OOD warnings), the plots."""
    by_name = {r["name"]: r for r in rows}
    winners_out = {}
    for key, win in best.items():
        row = by_name.get(win.get("name") or "")
        winners_out[key] = {**win, "inventory": inventory_snippet(row) if row else None,
                            "drafter": row_drafter(row) if row else None,
                            "trained_block_size": row.get("trained_block_size") if row else None,
                            "ood_warning": ood_warning(row) if row else None}  # fmt: skip
    return {"sweep": sweep_id, "host": host, "rows": list(rows), "winners": winners_out,
            "plots": [Path(p).name for p in plots], "launches": dict(launches or {})}  # fmt: skip
