"""Repeats while launched (module_utils/specgate/sweep/repeats.py and run.repeat_plan): which use cases a serving
point leaves within noise of what it must beat, how many more runs, which cells, and how the runs join its row."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.repeats import repeat_rounds, repeats_wanted, undecided
from ansible.module_utils.specgate.sweep.run import SweepInputError, repeat_plan
from ansible.module_utils.specgate.sweep.search import Measured
from ansible.module_utils.specgate.sweep.sweep_report import deciding_cells, interval_line, repeat_values, with_repeats

SHAPE = {"shortest_context": 512, "longest_context": 8192, "concurrency": [1, 64]}
CELLS = [{"set": s, "context_tokens": c, "concurrency": n} for s in ("chat", "code") for c in (512, 8192)
         for n in (1, 8, 64)]  # fmt: skip


def row(name: str, latency: list[float], *, cost: tuple = (9, 4, 8), accept: float = 5.0,
        throughput: float = 1000.0, **extra) -> dict:  # fmt: skip
    """A finished row whose latency runs are given; the other use cases far apart from any rival (decided)."""
    return {"name": name, "status": "ok", "failed": False, "cost": list(cost), "shape": SHAPE, "cells": CELLS,
            "speed_c1_short": sum(latency) / len(latency), "accept_long": accept, "tok_s_cmax": throughput,
            "per_run": {"speed_c1_short": list(latency), "accept_long": [accept * f for f in (0.99, 1.0, 1.01)],
                        "tok_s_cmax": [throughput * f for f in (0.99, 1.0, 1.01)]}, **extra}  # fmt: skip


def test_a_point_within_noise_of_the_best_doubles_its_runs_of_that_use_case_only():
    best = row("best", [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    close = row("close", [99.0, 101.0, 100.0])  # latency within noise; acceptance and throughput far below best
    assert repeats_wanted(close, {"best": best}, max_repeats=6) == {"speed_c1_short": 3}


def test_a_point_far_behind_the_best_or_the_first_of_its_use_case_takes_no_repeats():
    best = row("best", [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    assert repeats_wanted(row("far", [80.0, 81.0, 79.0]), {"best": best}) == {}
    assert repeats_wanted(row("first", [100.0, 101.0, 99.0]), {}) == {}


def test_a_point_that_leads_a_use_case_repeats_it_even_when_decided():
    """Every later point is judged against the leader's mean: a lucky three-run lead must not stand."""
    behind = row("behind", [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    leader = row("leader", [150.0, 151.0, 149.0])
    assert repeats_wanted(leader, {"behind": behind}, max_repeats=9) == {"speed_c1_short": 3}


def test_a_failed_point_or_repeats_off_takes_none():
    best = row("best", [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    assert repeats_wanted(row("close", [99.0, 101.0, 100.0]), {"best": best}, max_repeats=0) == {}
    failed = {"name": "crash", "status": "failed", "failed": True, "reason": "did not become ready"}
    assert repeats_wanted(failed, {"best": best}) == {}


def test_repeats_stop_at_the_budget_counting_those_already_taken():
    best = row("best", [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    close = row("close", [99.0, 101.0, 100.0, 100.5, 99.5, 100.0], repeats={"speed_c1_short": 3})
    assert repeats_wanted(close, {"best": best}, max_repeats=6) == {"speed_c1_short": 3}  # 3 left of 6
    assert repeats_wanted(close, {"best": best}, max_repeats=4) == {"speed_c1_short": 1}
    assert repeats_wanted(close, {"best": best}, max_repeats=3) == {}


def test_a_cheaper_point_is_judged_against_the_best_less_the_tolerance():
    """The pick takes the cheapest config within tolerance: a cheaper point 5 % below the best is decided (out)
    whatever the tolerance is; one exactly at the best less 5 % is undecided only when the tolerance is 5 %."""
    best = row("best", [100.0, 100.5, 99.5], cost=(17, 4, 8), accept=9.0, throughput=3000.0)
    cheaper = row("cheaper", [95.0, 95.5, 94.5], cost=(5, 4, 8))
    assert repeats_wanted(cheaper, {"best": best}, tolerance=0.01) == {}
    assert repeats_wanted(cheaper, {"best": best}, tolerance=0.05) == {"speed_c1_short": 3}


def test_undecided_counts_the_rivals_runs_as_noise_too():
    mine, theirs = Measured(101.0, 3, 1.0), Measured(100.0, 3, 1.0)
    assert undecided(mine, theirs, 100.0, 0.01)
    assert not undecided(Measured(110.0, 3, 1.0), theirs, 100.0, 0.01)
    # More of the rival's runs narrow the difference's noise: the same gap becomes decided.
    assert undecided(Measured(101.0, 48, 1.0), Measured(100.0, 3, 1.0), 100.0, 0.01)
    assert not undecided(Measured(101.0, 48, 1.0), Measured(100.0, 48, 1.0), 100.0, 0.01)


def test_the_deciding_cells_of_each_use_case():
    base = row("p", [100.0])
    assert deciding_cells(base, "speed_c1_short") == {"contexts": [512], "concurrency": [1]}
    assert deciding_cells(base, "accept_long") == {"contexts": [8192], "concurrency": [1, 8, 64]}
    assert deciding_cells(base, "tok_s_cmax") == {"contexts": [512, 8192], "concurrency": [64]}
    with pytest.raises(ValueError, match="not a use case metric"):
        deciding_cells(base, "ttft")


def bench(*runs: dict[tuple[int, int], float]) -> dict:
    """A repeat benchmark's result: per run, output tok/s per (context, concurrency) cell."""
    return {"runs": [{"cells": [{"set": "chat", "context_tokens": c, "concurrency": n, "output_tok_s": v,
                                 "accept_length_request": 4.0} for (c, n), v in cells.items()]}
                     for cells in runs]}  # fmt: skip


def test_a_repeat_benchmark_is_judged_on_the_points_first_corners_and_joins_its_row():
    base = row("p", [100.0, 101.0, 99.0])
    # The repeat ran only the latency cell (512 tokens, C=1): its runs are judged on the row's shape, not its own.
    values = repeat_values(base, bench({(512, 1): 104.0}, {(512, 1): 106.0}), ["speed_c1_short"])
    assert values == {"speed_c1_short": [104.0, 106.0]}
    joined = with_repeats(base, values)
    assert joined["per_run"]["speed_c1_short"] == [100.0, 101.0, 99.0, 104.0, 106.0]
    assert joined["speed_c1_short"] == pytest.approx(102.0)
    assert joined["repeats"] == {"speed_c1_short": 2}
    assert joined["per_run"]["tok_s_cmax"] == base["per_run"]["tok_s_cmax"]
    assert base["per_run"]["speed_c1_short"] == [100.0, 101.0, 99.0], "the row it came from is left as it was"
    assert interval_line(joined, "speed_c1_short").startswith("p: 102 ± ")
    assert interval_line(joined, "speed_c1_short").endswith(
        " over 5 run(s), 2 of them repeated while it served")
    assert interval_line(base, "speed_c1_short").endswith(" over 3 run(s)")
    with pytest.raises(ValueError, match="no cell deciding tok_s_cmax"):
        repeat_values(base, bench({(512, 1): 104.0}), ["tok_s_cmax"])


POINTS = expand({"axes": {"block_size": [8], "budget": [4, 8], "topk": [4]}})


def grid_row(index: int, latency: list[float], **extra) -> dict:
    point = POINTS[index]
    return row(point.name, latency, cost=point.cost(), point=point.key(), conditions="c1", bench_complete=True,
               **extra)  # fmt: skip


def test_the_plan_reads_only_rows_of_this_sweep_and_names_one_benchmark_for_the_wanted_cells():
    first = grid_row(0, [100.0, 102.0, 98.0], accept=9.0, throughput=3000.0)
    serving = grid_row(1, [101.0, 100.0, 99.0])
    plan = repeat_plan(POINTS, [first], serving, max_repeats=6, conditions="c1")
    assert plan == {"wanted": {"speed_c1_short": 3}, "runs": 3, "contexts": [512], "concurrency": [1]}
    # The same first row measured under other conditions does not count: nothing to be within noise of.
    assert repeat_plan(POINTS, [first], serving, max_repeats=6, conditions="c2")["runs"] == 0
    with pytest.raises(SweepInputError, match="spec_sweep_max_repeats"):
        repeat_plan(POINTS, [first], serving, max_repeats=-1)


def test_two_use_cases_undecided_share_one_benchmark_of_the_union_of_their_cells():
    first = grid_row(0, [100.0, 102.0, 98.0], accept=9.0)
    serving = grid_row(1, [101.0, 100.0, 99.0])  # latency and throughput within noise; acceptance far below
    plan = repeat_plan(POINTS, [first], serving, max_repeats=6, conditions="c1")
    assert plan["wanted"] == {"speed_c1_short": 3, "tok_s_cmax": 3}
    assert (plan["contexts"], plan["concurrency"]) == ([512, 8192], [1, 64])


@pytest.mark.parametrize(
    ("runs", "max_repeats", "rounds"),
    [(3, 9, 2), (3, 0, 0), (3, -1, 0), (3, 2, 1), (3, 3, 1), (3, 4, 2), (1, 9, 4), (5, 9, 2), (0, 9, 0)],
)
def test_the_rounds_a_point_can_take_double_its_runs_until_the_budget(runs, max_repeats, rounds):
    assert repeat_rounds(runs, max_repeats) == rounds
