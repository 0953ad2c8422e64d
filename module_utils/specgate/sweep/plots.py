"""The sweep report's plots (matplotlib, Agg: the controller has no display), drawn from the rows' cell means.

Three kinds: output tok/s vs concurrency per config; acceptance length vs the tokens drafted per step (a DDTree's
budget, a DFlash chain's block size - 1), a line per block size, top-k and window, one figure per prompt set and
context; per-user vs per-GPU tok/s with the Pareto front (vLLM's `plot_pareto`), one figure per prompt set and context
(a front across contexts compares cells no deployment serves at once). Series are labelled by the config's name, or by
the settings ``label_by`` names (spec_sweep_plot_by, as vLLM's `--label-by`), each with its real value; series that
overlap stay apart by line style and open or filled markers. Each `*_figure(s)` returns figures so tests can read their
series; `write_plots` saves them and returns the paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from ansible.module_utils.specgate.service.sglang_flags import SPEC_KEYS
from ansible.module_utils.specgate.sweep.grid import axis_name
from matplotlib.figure import Figure


def _ok(rows: Sequence[Mapping]) -> list[Mapping]:
    return [r for r in rows if not r.get("failed") and r.get("cells")]


LINE_STYLES = ("-", "--", ":", "-.")
# How a setting of a point reads in a legend (spec_sweep_plot_by names them): a speculative setting as
# sglang_flags.SPEC_KEYS says, the algorithm and the parallel preset by their value alone.
SETTING_LABELS = {
    "algorithm": "",
    "parallel": "",
    "drafter": "drafter ",
    **{axis_name(key): knob.legend or f"{axis_name(key)} " for key, knob in SPEC_KEYS.items()},
}


def _colour(index: int) -> tuple:
    return plt.get_cmap("tab20")(index % 20)


def _line_style(index: int) -> dict:
    """A colour of tab20, a marker, a line style, and open markers every other series: a grid's 18+ configs stay apart,
    and two series of identical values still show both (the default cycle has 10 colours, solid lines only)."""
    colour = _colour(index)
    return {"color": colour, "marker": "osD^v<>"[index // 2 % 7], "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
            "markerfacecolor": "none" if index % 2 else colour, "markersize": 7 if index % 2 else 5}  # fmt: skip


def _scatter_style(index: int) -> dict:
    colour = _colour(index)
    return {"edgecolors": colour, "facecolors": "none" if index % 2 else colour, "marker": "osD^v<>"[index // 2 % 7]}


def _value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, Mapping):  # a drafter
        return str(value.get("name") or value.get("repo") or value.get("local_path") or "none")
    return str(value)


def series_label(row: Mapping, label_by: Sequence[str] = ()) -> str:
    """A config's series label: its name, or the settings ``label_by`` names, each with its value (a setting of the
    point's key, or one of its sglang_service_* variables)."""
    if not label_by:
        return str(row["name"])
    point = row.get("point") or {}
    variables = {**(row.get("vars") or {}), **(point.get("vars") or {})}
    parts = []
    for setting in label_by:
        value = point[setting] if setting in point else variables.get(setting)
        prefix = SETTING_LABELS.get(setting, f"{setting.removeprefix('sglang_service_')} ")
        parts.append(f"{prefix}{_value(value)}")
    return ", ".join(parts)


def _legend(ax) -> None:
    if ax.get_legend_handles_labels()[1]:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _cells_of(row: Mapping, set_name: str, context: int) -> list[Mapping]:
    """A config's cells of one prompt set and context (a figure per pair draws them)."""
    return [c for c in row["cells"] if c["set"] == set_name and c["context_tokens"] == context]


def _cells_keys(rows: Sequence[Mapping]) -> list[tuple[str, int]]:
    return sorted({(c["set"], c["context_tokens"]) for r in _ok(rows) for c in r["cells"]})


def throughput_figure(rows: Sequence[Mapping], label_by: Sequence[str] = ()) -> Figure:
    """Output tok/s vs concurrency, one line per config (mean over prompt sets and contexts)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for index, row in enumerate(_ok(rows)):
        by_conc: dict[int, list[float]] = {}
        for c in row["cells"]:
            if c.get("output_tok_s") is not None:
                by_conc.setdefault(c["concurrency"], []).append(c["output_tok_s"])
        xs = sorted(by_conc)
        ax.plot(xs, [sum(by_conc[x]) / len(by_conc[x]) for x in xs], label=series_label(row, label_by),
                **_line_style(index))  # fmt: skip
    levels = sorted({c["concurrency"] for r in _ok(rows) for c in r["cells"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(level) for level in levels])  # the concurrency levels run, not powers of two
    ax.set_xlabel("concurrency")
    ax.set_ylabel("output tok/s")
    ax.set_title("Output throughput vs concurrency")
    _legend(ax)
    return fig


def drafted_per_step(point: Mapping) -> int | None:
    """The x of the acceptance plot: tokens drafted per step, a DDTree's budget or a DFlash chain's block size - 1."""
    if point.get("budget"):
        return int(point["budget"])
    if point.get("block_size"):
        return int(point["block_size"]) - 1
    if point.get("num_draft_tokens"):  # EAGLE3 / NEXTN: the draft tokens past the one the target verifies anyway
        return int(point["num_draft_tokens"]) - 1
    return None  # no speculation: nothing drafted


def acceptance_line_label(point: Mapping) -> str:
    """A line of the acceptance plot: the settings its points share (algorithm, block size, top-k, window)."""
    algorithm = point.get("algorithm") or ""
    if point.get("block_size") is None:  # EAGLE3 / NEXTN: a line per step count and top-k
        return f"{algorithm} steps {_value(point.get('num_steps'))} top-k {_value(point.get('eagle_topk'))}"
    chain = "" if algorithm == "DDTREE" else " chain"
    label = f"{algorithm}{chain} bs{point.get('block_size')}"
    if point.get("topk") is not None:
        label += f" top-k {point['topk']}"
    return f"{label} window {_value(point.get('window'))}"


def acceptance_figures(rows: Sequence[Mapping]) -> dict[tuple[str, int], Figure]:
    """Per prompt set and context: acceptance length (lowest concurrency) vs the tokens drafted per step, a line per
    block size, top-k and window, so how acceptance grows with the tree and with the block is seen side by side."""
    figures: dict[tuple[str, int], Figure] = {}
    for set_name, context in _cells_keys(rows):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        lines: dict[str, list[tuple[int, float]]] = {}
        for row in _ok(rows):
            point = row.get("point") or {}
            drafted = drafted_per_step(point)
            if drafted is None:
                continue
            cells = [c for c in _cells_of(row, set_name, context) if c.get("accept_length_request") is not None]
            if cells:
                lowest = min(cells, key=lambda c: c["concurrency"])
                lines.setdefault(acceptance_line_label(point), []).append((drafted, lowest["accept_length_request"]))
        for index, (label, pts) in enumerate(sorted(lines.items())):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **_line_style(index))
        ax.set_xlabel("tokens drafted per step (DDTree budget; block size - 1 for a DFlash chain; draft tokens - 1)")
        ax.set_ylabel("acceptance length")
        ax.set_title(f"Acceptance length vs tokens drafted: {set_name}, context {context}")
        _legend(ax)
        figures[(set_name, context)] = fig
    return figures


def pareto_front(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other beats on both axes (higher is better on both), by rising x."""
    front = []
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return sorted(front)


def pareto_figures(rows: Sequence[Mapping], label_by: Sequence[str] = ()) -> dict[tuple[str, int], Figure]:
    """Per prompt set and context: per-user tok/s vs per-GPU tok/s, every config's cells (one per concurrency), with
    that set's and context's Pareto front."""
    figures: dict[tuple[str, int], Figure] = {}
    for set_name, context in _cells_keys(rows):
        fig, ax = plt.subplots(figsize=(7, 5))
        everything: list[tuple[float, float]] = []
        for index, row in enumerate(_ok(rows)):
            pts = [(c["per_gpu_tok_s"], c["per_user_tok_s"]) for c in _cells_of(row, set_name, context)
                   if c.get("per_gpu_tok_s") is not None and c.get("per_user_tok_s") is not None]  # fmt: skip
            everything += pts
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=series_label(row, label_by), s=22,
                       **_scatter_style(index))  # fmt: skip
        front = pareto_front(everything)
        ax.plot([p[0] for p in front], [p[1] for p in front], color="black", linewidth=1.5, label="Pareto front")
        ax.set_xlabel("output tok/s per GPU")
        ax.set_ylabel("output tok/s per user")
        ax.set_title(f"Per-user vs per-GPU throughput: {set_name}, context {context}")
        _legend(ax)
        figures[(set_name, context)] = fig
    return figures


def write_plots(rows: Sequence[Mapping], directory: Path, label_by: Sequence[str] = ()) -> list[Path]:
    """Save every plot as PNG under ``directory``; the paths written, in the order the report embeds them. Nothing
    ran: no plot."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if not _ok(rows):
        return []
    figures = [("throughput-vs-concurrency.png", throughput_figure(rows, label_by))]
    figures += [(f"acceptance-{set_name}-ctx{context}.png", fig)
                for (set_name, context), fig in acceptance_figures(rows).items()]  # fmt: skip
    figures += [(f"pareto-{set_name}-ctx{context}.png", fig)
                for (set_name, context), fig in pareto_figures(rows, label_by).items()]  # fmt: skip
    written = []
    for name, fig in figures:
        path = directory / name
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written
