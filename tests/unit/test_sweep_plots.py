"""The sweep's plots: the expected series in the figures, and non-empty PNGs on disk; sweep.md embeds them."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.plots import (
    acceptance_figures,
    pareto_figures,
    pareto_front,
    series_label,
    throughput_figure,
    write_plots,
)
from ansible.module_utils.specgate.sweep.sweep_report import (
    failed_row,
    robust_winners,
    sweep_document,
    sweep_report_markdown,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def close_figures():
    """The figures a test reads are closed after it (pyplot keeps every figure it made until closed)."""
    yield
    plt.close("all")


def row(point, accept, tok_s):
    cells = [{"set": s, "context_tokens": ctx, "concurrency": c, "output_tok_s": tok_s * c ** 0.5,
              "accept_length_request": accept - ctx / 1e5, "per_user_tok_s": tok_s / c ** 0.2,
              "per_gpu_tok_s": tok_s * c ** 0.5 / 8}
             for s in ("code", "chat") for ctx in (512, 32768) for c in (1, 64)]  # fmt: skip
    return {"name": point.name, "release": "r", "failed": False, "status": "ok", "point": point.key(),
            "cost": list(point.cost()), "vars": point.service_vars(), "trained_block_size": 8, "cells": cells,
            "speed_c1_short": tok_s, "accept_long": accept, "tok_s_cmax": tok_s * 8, "ttft_p50_ms_c1_short": 50.0,
            "eval_pass_rate": None, "speculative_algorithm": "DDTREE"}  # fmt: skip


@pytest.fixture
def rows():
    points = expand([{"axes": {"block_size": [8], "budget": [4, 8]}}, {"axes": {"block_size": [16], "budget": [32]}}])
    return [row(points[0], 3.5, 150.0), row(points[1], 4.4, 160.0), row(points[2], 5.1, 158.0),
            failed_row("crashed", None, "did not start")]  # fmt: skip


def test_throughput_has_a_line_per_config_over_the_concurrency_levels(rows):
    ax = throughput_figure(rows).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"bs8-b4", "bs8-b8", "bs16-b32"}
    assert list(lines["bs8-b4"].get_xdata()) == [1, 64]
    assert lines["bs8-b4"].get_ydata()[1] == pytest.approx(150.0 * 8)


def test_acceptance_has_a_figure_per_set_and_context_and_a_line_per_block(rows):
    figures = acceptance_figures(rows)
    assert set(figures) == {("code", 512), ("code", 32768), ("chat", 512), ("chat", 32768)}
    lines = {line.get_label(): line for line in figures[("code", 512)].axes[0].get_lines()}
    assert set(lines) == {"DDTREE bs8 window none", "DDTREE bs16 window none"}
    assert list(lines["DDTREE bs8 window none"].get_xdata()) == [4, 8]
    assert list(lines["DDTREE bs8 window none"].get_ydata()) == pytest.approx([3.5 - 512 / 1e5, 4.4 - 512 / 1e5])


def test_a_dflash_chain_sits_at_block_size_minus_one_as_the_axis_says_and_labels_have_real_values():
    points = expand([{"axes": {"algorithm": ["DFLASH"], "block_size": [8, 16], "window": [2048]}},
                     {"axes": {"block_size": [8], "budget": [4, 8], "topk": [4]}}])  # fmt: skip
    figure = acceptance_figures([row(p, 4.0, 100.0) for p in points])[("code", 512)]
    ax = figure.axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"DFLASH chain bs8 window 2048", "DFLASH chain bs16 window 2048",
                          "DDTREE bs8 top-k 4 window none"}
    assert list(lines["DFLASH chain bs8 window 2048"].get_xdata()) == [7]
    assert list(lines["DFLASH chain bs16 window 2048"].get_xdata()) == [15]
    assert "block size - 1 for a DFlash chain" in ax.get_xlabel()
    assert not any("None" in label for label in lines)


def test_series_of_identical_values_stay_apart_by_style(rows):
    twins = [rows[0], {**rows[0], "name": "twin"}]
    first, second = throughput_figure(twins).axes[0].get_lines()
    assert list(first.get_ydata()) == list(second.get_ydata())
    styles = [(line.get_linestyle(), str(line.get_markerfacecolor())) for line in (first, second)]
    assert styles[0] != styles[1]


def test_spec_sweep_plot_by_labels_series_by_the_settings_it_names(rows):
    assert series_label(rows[0]) == "bs8-b4"
    assert series_label(rows[0], ["block_size", "budget", "window"]) == "bs8, budget 4, window none"
    labels = [line.get_label() for line in throughput_figure(rows, ["block_size", "budget"]).axes[0].get_lines()]
    assert labels == ["bs8, budget 4", "bs8, budget 8", "bs16, budget 32"]


def test_the_pareto_front_keeps_only_the_undominated_points_one_front_per_set_and_context(rows):
    assert pareto_front([(1, 5), (2, 4), (2, 3), (3, 1), (0.5, 4)]) == [(1, 5), (2, 4), (3, 1)]
    figures = pareto_figures(rows)
    assert set(figures) == {("code", 512), ("code", 32768), ("chat", 512), ("chat", 32768)}
    ax = figures[("code", 512)].axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["Pareto front"]
    assert len(ax.collections) == 3  # a scatter per config that ran
    # Only that set's and context's cells: one per concurrency level per config.
    assert all(len(scatter.get_offsets()) == 2 for scatter in ax.collections)


def test_the_plots_are_written_as_non_empty_png_and_embedded_in_sweep_md(rows, tmp_path):
    paths = write_plots(rows, tmp_path)
    assert len(paths) == 1 + 4 + 4
    assert write_plots([rows[-1]], tmp_path / "none") == []  # nothing ran: no plot
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), path
        assert len(data) > 5000, path
    best = robust_winners(rows)
    launches = {"mode": "search", "launched": 3, "points": 4, "pruned": {"bs8-b12-t4": "bounded at 97.0% of the best"},
                "notes": ["speed_c1_short: the best, bs8-b8-t4 (150), has every neighbour measured"]}  # fmt: skip
    md = sweep_report_markdown("s1", "ct200", rows, best, plots=[str(p) for p in paths], launches=launches)
    assert "Launches: 3 of 4 grid points (search mode)." in md
    assert "- not launched: bs8-b12-t4: bounded at 97.0% of the best" in md
    assert "- speed_c1_short: the best, bs8-b8-t4 (150), has every neighbour measured" in md
    doc = sweep_document("s1", "ct200", rows, best, plots=[str(p) for p in paths], launches=launches)
    json.dumps(doc)  # sweep.json is plain JSON
    assert doc["plots"] == [p.name for p in paths]
    assert doc["winners"]["long_context"]["ood_warning"].startswith("block size 16 is past")
    assert "sglang_service_block_size: 16" in doc["winners"]["long_context"]["inventory"]
    assert doc["winners"]["latency"]["ood_warning"] is None
    for path in paths:
        assert f"({path.name})" in md
    assert "## long_context: bs16-b32" in md
    assert "WARNING: block size 16 is past the drafter's trained block size 8" in md
    assert "sglang_service_ddtree_budget: 32" in md
