"""The pick: the mean over runs with its interval, the cheapest within tolerance, ties and noise said."""

from __future__ import annotations

import statistics

import pytest
from ansible.module_utils.specgate.sweep.pick import pick, score


def test_score_is_the_mean_and_its_interval_is_1_96_standard_errors():
    s = score("a", [100.0, 110.0, 90.0, 104.0])
    assert s.score == s.mean == pytest.approx(101.0)
    assert s.dispersion == pytest.approx(1.96 * statistics.stdev([100.0, 110.0, 90.0, 104.0]) / 2)
    assert score("b", [5.0]).dispersion == 0.0


def test_a_config_wins_by_its_mean_not_by_its_best_run():
    chosen = pick({"lucky": [100.0, 160.0, 100.0, 40.0], "steady": [120.0, 121.0, 119.0]})
    assert chosen.winner == "steady"


def test_the_cheapest_within_tolerance_wins_and_the_best_is_said():
    chosen = pick({"big": [200.0, 200.0, 200.0], "small": [199.0, 199.0, 199.0], "far": [150.0, 150.0, 150.0]},
                  {"big": (33, 8, 16), "small": (9, 4, 8), "far": (5, 4, 8)})  # fmt: skip
    assert (chosen.winner, chosen.best) == ("small", "big")
    assert set(chosen.within_tolerance) == {"big", "small"}
    assert any("big scored highest" in n for n in chosen.notes)
    assert pick({"big": [200.0], "small": [190.0]}, {"big": (33,), "small": (9,)}).winner == "big"


def test_equal_cost_ties_go_to_the_higher_score_then_to_the_config_better_elsewhere():
    values = {"a": [100.0, 100.0, 100.0], "b": [100.0, 100.0, 100.0]}
    chosen = pick(values, {"a": (9,), "b": (9,)}, elsewhere={"a": 1.0, "b": 1.5})
    assert chosen.winner == "b"
    assert chosen.best == "b"
    assert chosen.ties == ("a",)
    assert not any("scored highest" in n for n in chosen.notes)
    assert pick(values, {"a": (9,), "b": (9,)}).winner == "a"


def test_configs_whose_spread_overlaps_the_winner_are_within_noise():
    chosen = pick({"a": [100.0, 104.0, 96.0], "b": [102.0, 106.0, 98.0], "c": [200.0, 200.0, 200.0]})
    assert chosen.winner == "c"
    assert chosen.within_noise == ()
    assert pick({"a": [100.0, 104.0, 96.0], "b": [102.0, 106.0, 98.0]}).within_noise == ("a",)


def test_a_bad_tolerance_is_refused_and_nothing_to_pick_is_no_winner():
    with pytest.raises(ValueError, match="tolerance"):
        pick({"a": [1.0]}, tolerance=1.5)
    assert pick({"a": []}).winner is None


def test_a_cheaper_config_wins_only_when_its_runs_put_it_within_tolerance_with_confidence():
    """Both cheaper configs measure 0.5 % below the best: the one whose runs are tight wins; with runs as noisy as
    3 % the best stays the winner (the cheaper one may truly be further below), and it is said to be within noise."""
    cost = {"big": (17, 4, 8), "small": (9, 4, 8)}
    tight = pick({"big": [200.0, 200.2, 199.8], "small": [199.0, 199.2, 198.8]}, cost)
    assert tight.winner == "small"
    noisy = pick({"big": [194.0, 200.0, 206.0], "small": [193.0, 199.0, 205.0]}, cost)
    assert noisy.winner == "big"
    assert noisy.within_noise == ("small",)
    # More runs of the same spread narrow the mean's interval: the cheaper config is confidently within again.
    many = pick({"big": [194.0, 200.0, 206.0] * 12, "small": [193.0, 199.0, 205.0] * 12}, cost, tolerance=0.02)
    assert many.winner == "small"
