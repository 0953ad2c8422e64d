"""The sweep report's plots (matplotlib, Agg: the controller has no display), drawn from the rows' cell means.

Three kinds: output tok/s vs concurrency per config; acceptance length vs budget per block size, one figure per
prompt set and context; per-user vs per-GPU tok/s with the Pareto front (vLLM's `plot_pareto`). Each `*_figure`
returns the figure so tests can read its series; `write_plots` saves them and returns the paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure


def _ok(rows: Sequence[Mapping]) -> list[Mapping]:
    return [r for r in rows if not r.get("failed") and r.get("cells")]


def _style(index: int) -> dict:
    """A colour of tab20 and a marker per config: a grid's 18+ configs stay apart (the default cycle has 10)."""
    return {"color": plt.get_cmap("tab20")(index % 20), "marker": "osD^v<>"[index // 20 % 7]}


def _legend(ax) -> None:
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def throughput_figure(rows: Sequence[Mapping]) -> Figure:
    """Output tok/s vs concurrency, one line per config (mean over prompt sets and contexts)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for index, row in enumerate(_ok(rows)):
        by_conc: dict[int, list[float]] = {}
        for c in row["cells"]:
            if c.get("output_tok_s") is not None:
                by_conc.setdefault(c["concurrency"], []).append(c["output_tok_s"])
        xs = sorted(by_conc)
        ax.plot(xs, [sum(by_conc[x]) / len(by_conc[x]) for x in xs], label=row["name"], **_style(index))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency")
    ax.set_ylabel("output tok/s")
    ax.set_title("Output throughput vs concurrency")
    _legend(ax)
    return fig


def acceptance_figures(rows: Sequence[Mapping]) -> dict[tuple[str, int], Figure]:
    """Per prompt set and context: acceptance length (lowest concurrency) vs DDTree budget, a line per block size
    and window, so how acceptance grows with the tree and with the block is seen side by side."""
    figures: dict[tuple[str, int], Figure] = {}
    keys = sorted({(c["set"], c["context_tokens"]) for r in _ok(rows) for c in r["cells"]})
    for set_name, context in keys:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        lines: dict[str, list[tuple[int, float]]] = {}
        for row in _ok(rows):
            point = row.get("point") or {}
            budget = point.get("budget") or point.get("block_size")
            if budget is None:
                continue
            label = f"bs{point.get('block_size')} t{point.get('topk')} window {point.get('window') or 'none'}"
            cells = [c for c in row["cells"] if c["set"] == set_name and c["context_tokens"] == context
                     and c.get("accept_length_request") is not None]  # fmt: skip
            if cells:
                lowest = min(cells, key=lambda c: c["concurrency"])
                lines.setdefault(label, []).append((budget, lowest["accept_length_request"]))
        for index, (label, pts) in enumerate(sorted(lines.items())):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **_style(index))
        ax.set_xlabel("DDTree budget (block size - 1 without a tree)")
        ax.set_ylabel("acceptance length")
        ax.set_title(f"Acceptance length vs budget: {set_name}, context {context}")
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


def pareto_figure(rows: Sequence[Mapping]) -> Figure:
    """Per-user tok/s vs per-GPU tok/s, every config's cells, with the Pareto front."""
    fig, ax = plt.subplots(figsize=(7, 5))
    everything: list[tuple[float, float]] = []
    for index, row in enumerate(_ok(rows)):
        pts = [(c["per_gpu_tok_s"], c["per_user_tok_s"]) for c in row["cells"]
               if c.get("per_gpu_tok_s") is not None and c.get("per_user_tok_s") is not None]  # fmt: skip
        everything += pts
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=row["name"], s=18, **_style(index))
    front = pareto_front(everything)
    ax.plot([p[0] for p in front], [p[1] for p in front], color="black", linewidth=1.5, label="Pareto front")
    ax.set_xlabel("output tok/s per GPU")
    ax.set_ylabel("output tok/s per user")
    ax.set_title("Per-user vs per-GPU throughput")
    _legend(ax)
    return fig


def write_plots(rows: Sequence[Mapping], directory: Path) -> list[Path]:
    """Save every plot as PNG under ``directory``; the paths written, in the order the report embeds them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    figures = [("throughput-vs-concurrency.png", throughput_figure(rows))]
    figures += [(f"acceptance-{set_name}-ctx{context}.png", fig)
                for (set_name, context), fig in acceptance_figures(rows).items()]  # fmt: skip
    figures.append(("pareto-per-user-vs-per-gpu.png", pareto_figure(rows)))
    written = []
    for name, fig in figures:
        path = directory / name
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written
