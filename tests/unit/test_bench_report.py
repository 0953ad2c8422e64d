"""Markdown people read: the benchmark matrix and the gate table."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.bench_report import bench_markdown, gate_markdown

pytestmark = pytest.mark.host


def _cell(set_name, tok_s, accept):
    lat = {"p50_ms": 10.0, "p90_ms": 20.0, "p99_ms": 30.0, "mean_ms": 12.0}
    return {
        "set": set_name, "context": "short", "concurrency": 4, "output_tok_s": tok_s, "request_per_s": 2.0,
        "ttft": lat, "itl": lat, "accept_length_request": accept, "accept_length_server": accept - 0.1,
        "tokens": {"output_received": 512, "output_requested": 512},
    }  # fmt: skip


def test_bench_table_averages_a_cell_over_runs_and_lists_sets_and_eval():
    sets = {"code": {"accept_length_request": 5.0, "accept_length_server": 4.9}}
    runs = [
        {"cells": [_cell("code", 100.0, 5.0)], "sets": sets,
         "eval": {"passed": 23, "problems": 24, "results": [{"name": "fib", "outcome": "truncated"}]}},
        {"cells": [_cell("code", 200.0, 5.0)], "sets": sets, "eval": {"passed": 24, "problems": 24, "results": []}},
    ]  # fmt: skip
    md = bench_markdown({"schema": "specgate.bench/v1", "server": {"speculative_algorithm": "DFLASH"}, "runs": runs})
    assert "| code | short | 4 | 150.0 | 2.00 | 10.0 / 20.0 / 30.0 |" in md
    assert "| 1024 / 1024 |" in md
    assert "| code | 5.00 | 4.90 |" in md
    assert "Coding eval: 23/24, 24/24 passed; not passing: fib (truncated)" in md


def test_gate_table_has_a_row_per_metric_and_skipped_condition_and_the_verdict():
    gate = {
        "release": "abc",
        "action": "rollback",
        "message": "Gate failed for release abc: ...",
        "analysis": {
            "phase": "Failed",
            "runs": 3,
            "metrics": [
                {"description": "Acceptance length (request-side, set code)", "success_condition": ">= 3",
                 "variable": "spec_gate_min_accept_length", "measurements": [2.1, 2.2, 2.0],
                 "interval": {"mean": 2.1, "low": 1.85, "high": 2.35}, "phase": "Failed"},
            ],
            "skipped": [{"name": "speedup", "variable": "spec_gate_min_speedup", "reason": "no baseline"}],
        },
    }  # fmt: skip
    md = gate_markdown(gate)
    assert md.startswith("Gate for release abc — Failed after 3 run(s) → rollback")
    assert (
        "| Acceptance length (request-side, set code) | >= 3 (spec_gate_min_accept_length) | 2.1, 2.2, 2 | 2.100 |"
        in md
    )
    assert "1.850 to 2.350 | Failed |" in md
    assert "skipped: no baseline" in md
    assert md.rstrip().endswith("Gate failed for release abc: ...")
