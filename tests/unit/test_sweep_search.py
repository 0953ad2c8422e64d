"""The bounded search: a point is launched while its bound (unimodal, diminishing returns, monotone ratio between
lines, each measured value widened by its noise) could still beat the best of a use case; no branch is dropped on one
comparison; a crash is stepped over; every point not launched says why, every winner which neighbours confirm it."""

from __future__ import annotations

import math

import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.search import Measured, curve_bound, neighbours, propose, ratio_bound
from sweep_fakes import bench_script, lattice, synthetic_row


def test_a_rising_curve_is_bounded_by_its_slope_carried_on_and_a_falling_one_by_its_nearer_value():
    assert curve_bound(16, [(4, 100.0), (8, 110.0)], 0.0) == pytest.approx(130.0)
    assert curve_bound(16, [(4, 110.0), (8, 100.0)], 0.0) == pytest.approx(100.0)
    assert curve_bound(4, [(8, 100.0), (12, 110.0)], 0.0) == pytest.approx(100.0)
    # a fall to the right is the far side of a peak, which may fall steeply from it: no bound to its left
    assert curve_bound(4, [(8, 110.0), (12, 100.0)], 0.0) == math.inf
    # one measured point on each side says nothing about a peak between them
    assert curve_bound(8, [(4, 100.0), (12, 100.0)], 0.0) == math.inf
    # noise widens it: the near value raised, the far one lowered, by one standard error; a fall within that is no fall
    assert curve_bound(16, [(4, 110.0), (8, 100.0)], 0.02) == pytest.approx(102.0)
    assert curve_bound(16, [(4, 110.0), (8, 100.0)], 0.05) == pytest.approx(105.0 + (105.0 - 104.5) / 4 * 8)


def test_a_line_is_bounded_by_another_line_and_their_ratio_at_the_budgets_around_it():
    theirs = {4: 100.0, 8: 120.0, 16: 110.0}
    assert ratio_bound(8, {4: 90.0, 16: 88.0}, theirs, 0.0) == pytest.approx(120.0 * 0.9)
    # from one side only while the ratio falls toward the point
    assert ratio_bound(16, {4: 90.0, 8: 120.0}, theirs, 0.0) == math.inf
    assert ratio_bound(16, {4: 95.0, 8: 90.0}, theirs, 0.0) == pytest.approx(110.0 * 0.75)
    assert ratio_bound(12, {4: 90.0, 16: 88.0}, theirs, 0.0) == math.inf  # the other line did not run there


def test_neighbours_follow_the_budget_on_the_line_and_top_k_at_the_budget():
    points = lattice()
    here = next(p for p in points if p.name == "bs8-b8-t4")
    assert sorted(q.name for q in neighbours(here, points)) == ["bs8-b12-t4", "bs8-b4-t4", "bs8-b8-t6"]


def test_the_first_launches_are_the_ends_of_every_line():
    points = lattice()
    proposal = propose(points, {})
    assert proposal.points[0].name == "bs8-b4-t4-w2048"
    scores: dict = {}
    launched = []
    while (proposal := propose(points, scores)).points and len(launched) < 8:
        point = proposal.points[0]
        launched.append(point.name)
        scores[point.name] = _measured(synthetic_row(point))
    assert sorted(launched) == sorted(p.name for p in points if p.budget in (4, 16))


def test_after_the_ends_the_line_nearest_a_best_is_measured_first():
    """Past the ends, the most promising line goes first: the likeliest to hold a winner, and measured along its budgets
    it bounds the other lines through their ratio. Here the top-k 6 line leads at both ends, so its interior comes
    before the top-k 4 line's, which leads nowhere."""
    points = [p for p in lattice() if p.window is None]
    ends = [p.name for p in points if p.budget in (4, 16)]
    values = {"bs8-b4-t4": 90.0, "bs8-b16-t4": 92.0, "bs8-b4-t6": 98.0, "bs8-b16-t6": 100.0}
    scores = {name: {"speed_c1_short": Measured(values[name], 3, 0.0)} for name in ends}
    assert propose(points, scores).points[0].name in ("bs8-b8-t6", "bs8-b12-t6")
    values.update({"bs8-b4-t4": 98.0, "bs8-b16-t4": 100.0, "bs8-b4-t6": 90.0, "bs8-b16-t6": 92.0})
    scores = {name: {"speed_c1_short": Measured(values[name], 3, 0.0)} for name in ends}
    assert propose(points, scores).points[0].name in ("bs8-b8-t4", "bs8-b12-t4")


def _measured(row: dict) -> dict[str, Measured]:
    return {m: Measured(sum(v) / len(v), len(v), 0.0) for m, v in row["per_run"].items()}


@pytest.mark.parametrize("peak", [4, 8, 12, 16])
def test_search_finds_the_exhaustive_winners_with_fewer_launches_and_says_why_each_point_was_left(peak):
    script = bench_script()
    points = lattice()
    exhaustive = script.run_mode(points, lambda p: synthetic_row(p, peak=peak), search=False, tolerance=0.01)
    search = script.run_mode(points, lambda p: synthetic_row(p, peak=peak), search=True, tolerance=0.01)
    assert len(exhaustive.launches) == 16
    assert script.winner_names(search) == script.winner_names(exhaustive)
    assert script.winner_names(search)["latency"] == f"bs8-b{peak}-t4"
    assert len(search.launches) < len(exhaustive.launches)
    left = {p.name for p in points} - set(search.launches)
    assert set(search.pruned) == left
    assert all(why.startswith("bounded at ") and "of the best" in why for why in search.pruned.values())
    assert any(note.startswith(f"speed_c1_short: the best, bs8-b{peak}-t4 ") for note in search.notes)


def test_no_branch_is_dropped_on_one_comparison():
    """The window branch loses at the shared cheapest point on every use case: v2 pruned it there; its other end is
    still launched, because one comparison bounds nothing further along the line."""
    points = lattice()
    scores = {p.name: _measured(synthetic_row(p)) for p in points if p.budget == 4}
    wanted = [p.name for p in propose(points, scores).points]
    assert wanted == ["bs8-b16-t4-w2048"]


def test_a_crashed_point_is_finished_never_relaunched_and_the_bounds_step_over_it():
    points = expand({"axes": {"block_size": [8], "budget": [4, 8, 12, 16, 24], "topk": [4]}})
    row = {p.name: _measured(synthetic_row(p, peak=16)) for p in points}
    scores = {"bs8-b4-t4": row["bs8-b4-t4"], "bs8-b8-t4": None, "bs8-b24-t4": row["bs8-b24-t4"]}
    seen = []
    while (proposal := propose(points, scores)).points:
        point = proposal.points[0]
        assert point.name != "bs8-b8-t4"
        seen.append(point.name)
        scores[point.name] = row[point.name]
    assert "bs8-b16-t4" in seen  # the peak past the crash was reached
    assert any("bs8-b8-t4 crashed or was refused beside it" in note for note in proposal.notes)


def test_a_step_within_noise_is_not_a_fall_but_one_beyond_it_is():
    points = expand({"axes": {"block_size": [8], "budget": [4, 8, 12, 16]}})

    def measured(value: float, spread: float) -> dict[str, Measured]:
        return {"u": Measured(value, 3, spread)}

    # 2 % apart with a 5 % spread per run: the curve may still rise, b12 and b16 stay in play
    noisy = {"bs8-b4": measured(100.0, 5.0), "bs8-b8": measured(98.0, 5.0), "bs8-b16": measured(90.0, 5.0)}
    assert [p.name for p in propose(points, noisy).points] == ["bs8-b12"]
    # 20 % apart with the same spread: a fall; b12 is bounded below b4 and not launched
    clear = {"bs8-b4": measured(100.0, 5.0), "bs8-b8": measured(80.0, 5.0), "bs8-b16": measured(60.0, 5.0)}
    proposal = propose(points, clear)
    assert proposal.points == ()
    assert proposal.pruned["bs8-b12"].startswith("bounded at ")


def test_a_dflash_chain_is_one_curve_over_its_block_size_and_a_baseline_a_point_of_its_own():
    points = expand([{"name": "chain", "axes": {"algorithm": ["DFLASH"], "block_size": [4, 6, 8, 12, 16, 24]}},
                     {"name": "base", "axes": {"algorithm": ["none"]}}])  # fmt: skip

    def value(point) -> dict[str, Measured]:
        drafted = (point.block_size or 1) - 1
        return {"speed_c1_short": Measured(100.0 - abs(drafted - 7) ** 2, 3, 0.0)}  # peaks at block size 8

    scores: dict = {}
    launched = []
    while (proposal := propose(points, scores)).points:
        point = proposal.points[0]
        launched.append(point.name)
        scores[point.name] = value(point)
    assert launched[:3] == ["dflash-bs4", "dflash-bs24", "nospec"]  # the chain's two ends, the baseline
    assert "dflash-bs8" in launched
    assert len(launched) < len(points)
    assert set(proposal.pruned) == {p.name for p in points} - set(launched)
