"""scripts/bench_fleet_rollout.py's figures: each ratio over the repetitions as its median, min and max, each
repetition divided by its own one-replica time, the cost per replica beside it; and the run kept under reports/."""

from __future__ import annotations

import json

import pytest
from script_loader import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_fleet_rollout")


def _rep(bench, single_s: float, serial_s: float, batch_s: float):
    hosts = ["a", "b"]
    return bench.Repetition(
        bench.Round("one replica", ["a"], single_s, "successful", ["a"]),
        bench.Round("serial 1", hosts, serial_s, "successful", hosts, {"a": (3, 1.5), "b": (2, 0.9)}),
        bench.Round('batches ["100%"]', hosts, batch_s, "successful", hosts),
    )


def test_each_ratio_divides_by_its_own_repetitions_one_replica_time(bench):
    rep = _rep(bench, 50.0, 90.0, 55.0)
    assert bench.ratio(rep.serial, rep.single) == pytest.approx(0.9)
    assert bench.ratio(rep.batched, rep.single) == pytest.approx(0.55)


def test_the_summary_gives_median_min_max_of_each_ratio_and_the_cost_per_replica(bench):
    reps = [_rep(bench, 50.0, 90.0, 55.0), _rep(bench, 40.0, 88.0, 40.0), _rep(bench, 60.0, 96.0, 66.0)]
    one, serial, batches = bench.ratio_lines(reps)
    assert one == "one replica (a): 50.00 s median (min 40.00 s, max 60.00 s)"
    # serial ratios 0.9, 1.1, 0.8; per replica 45, 44, 48 s
    assert serial == ("serial 1: rollout / (2 x one replica) = 0.90 median (min 0.80, max 1.10); "
                      "per replica 45.00 s median (min 44.00 s, max 48.00 s)")  # fmt: skip
    # batch ratios 0.55, 0.5, 0.55; per replica 27.5, 20, 33 s
    assert batches.startswith('batches ["100%"]: rollout / (2 x one replica) = 0.55 median (min 0.50, max 0.55)')
    assert batches.endswith("per replica 27.50 s median (min 20.00 s, max 33.00 s)")


def test_the_run_is_kept_with_every_rounds_row_the_ratios_and_the_summary(bench, tmp_path):
    reps = [_rep(bench, 50.0, 90.0, 55.0), _rep(bench, 40.0, 88.0, 40.0)]
    lines = [*bench.ratio_lines(reps), bench.success_line(120, 0)]
    json_path, md_path = bench.write_reports(tmp_path / "reports" / "fleet-bench", "20261205T230000Z", reps, lines,
                                             ok=120, failed=[])  # fmt: skip
    kept = json.loads(json_path.read_text())
    assert [(row["repetition"], row["name"], row["wall_s"]) for row in kept["rows"]] == [
        (1, "one replica", 50.0), (1, "serial 1", 90.0), (1, 'batches ["100%"]', 55.0),
        (2, "one replica", 40.0), (2, "serial 1", 88.0), (2, 'batches ["100%"]', 40.0),
    ]  # fmt: skip
    assert kept["rows"][1]["leaves"] == {"a": [3, 1.5], "b": [2, 0.9]}
    assert [r["serial1"] for r in kept["ratios"]] == pytest.approx([0.9, 1.1])
    assert kept["summary"] == lines
    assert (kept["requests_ok"], kept["requests_failed"]) == (120, [])
    markdown = md_path.read_text()
    assert "requests through the router during the serial-1 rollouts: 120/120 succeeded (100.00 %)" in markdown
    assert "| 2 | serial 1 | 2 | 88.0 | successful | a, b |" in markdown
