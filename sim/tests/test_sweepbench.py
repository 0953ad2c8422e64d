"""The sweep's bench cells from the sim's engine: spec_gate's keys, the model's speed and acceptance, run noise."""

from __future__ import annotations

import pytest
from specgate_sim.specmodel import SpecConfig, estimate
from specgate_sim.sweepbench import CellPlan, bench_cell, bench_result


def test_a_c1_cell_measures_what_the_model_expects():
    cfg = SpecConfig("DDTREE", 8, 8, 8, 4)
    cell = bench_cell(cfg, CellPlan("chat", 512, 1), requests=12, output_tokens=300, seed=1)
    expected = estimate(cfg, mix={"chat": 1.0}, context_tokens=512)
    assert cell["accept_length_request"] == pytest.approx(expected.accept_length, rel=0.1)
    assert 1000.0 / cell["tpot"]["p50_ms"] == pytest.approx(expected.tokens_per_s, rel=0.15)
    assert cell["output_tokens"] == 12 * 300
    assert cell["ttft"]["p50_ms"] < 200.0  # one request in flight at a time: no queueing in the TTFT


def test_concurrency_raises_throughput_and_a_result_has_every_cell_of_every_run():
    cfg = SpecConfig("DDTREE", 8, 8, 4, 4)
    result = bench_result(cfg, sets=["code", "chat"], contexts=[512, 8192], concurrency=[1, 16], runs=2,
                          output_tokens=64)  # fmt: skip
    assert [len(run["cells"]) for run in result["runs"]] == [8, 8]
    cells = result["runs"][0]["cells"]
    c1 = next(c for c in cells if c["set"] == "code" and c["context_tokens"] == 512 and c["concurrency"] == 1)
    c16 = next(c for c in cells if c["set"] == "code" and c["context_tokens"] == 512 and c["concurrency"] == 16)
    assert c16["output_tok_s"] > 3 * c1["output_tok_s"]
    first, second = (run["cells"][0]["accept_length_request"] for run in result["runs"])
    assert first != second  # runs draw other requests, as a real benchmark's do
