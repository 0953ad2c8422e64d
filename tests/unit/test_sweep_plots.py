"""The sweep's plots: the expected series in the figures, and non-empty PNGs on disk; sweep.md embeds them."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.plots import (
    acceptance_figures,
    pareto_figure,
    pareto_front,
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
    assert set(lines) == {"bs8-b4-tNone", "bs8-b8-tNone", "bs16-b32-tNone"}
    assert list(lines["bs8-b4-tNone"].get_xdata()) == [1, 64]
    assert lines["bs8-b4-tNone"].get_ydata()[1] == pytest.approx(150.0 * 8)


def test_acceptance_has_a_figure_per_set_and_context_and_a_line_per_block(rows):
    figures = acceptance_figures(rows)
    assert set(figures) == {("code", 512), ("code", 32768), ("chat", 512), ("chat", 32768)}
    lines = {line.get_label(): line for line in figures[("code", 512)].axes[0].get_lines()}
    assert set(lines) == {"bs8 tNone window none", "bs16 tNone window none"}
    assert list(lines["bs8 tNone window none"].get_xdata()) == [4, 8]
    assert list(lines["bs8 tNone window none"].get_ydata()) == pytest.approx([3.5 - 512 / 1e5, 4.4 - 512 / 1e5])


def test_the_pareto_front_keeps_only_the_undominated_points(rows):
    assert pareto_front([(1, 5), (2, 4), (2, 3), (3, 1), (0.5, 4)]) == [(1, 5), (2, 4), (3, 1)]
    ax = pareto_figure(rows).axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["Pareto front"]
    assert len(ax.collections) == 3  # a scatter per config that ran


def test_the_plots_are_written_as_non_empty_png_and_embedded_in_sweep_md(rows, tmp_path):
    paths = write_plots(rows, tmp_path)
    assert len(paths) == 1 + 4 + 1
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC), path
        assert len(data) > 5000, path
    best = robust_winners(rows)
    launches = {"mode": "search", "launched": 3, "points": 4, "pruned": {"ddtree bs8 window 2048": "dominated"},
                "notes": ["speed_c1_short: flat within 1% from a to b"]}  # fmt: skip
    md = sweep_report_markdown("s1", "ct200", rows, best, plots=[str(p) for p in paths], launches=launches)
    assert "Launches: 3 of 4 grid points (search mode)." in md
    assert "the search could have missed a winner here: speed_c1_short: flat" in md
    doc = sweep_document("s1", "ct200", rows, best, plots=[str(p) for p in paths], launches=launches)
    json.dumps(doc)  # sweep.json is plain JSON
    assert doc["plots"] == [p.name for p in paths]
    assert doc["winners"]["long_context"]["ood_warning"].startswith("block size 16 is past")
    assert "sglang_service_block_size: 16" in doc["winners"]["long_context"]["inventory"]
    assert doc["winners"]["latency"]["ood_warning"] is None
    for path in paths:
        assert f"({path.name})" in md
    assert "## long_context: bs16-b32-tNone" in md
    assert "WARNING: block size 16 is past the drafter's trained block size 8" in md
    assert "sglang_service_ddtree_budget: 32" in md
