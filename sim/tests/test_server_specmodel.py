"""The parametric speculative model: the shapes the field notes describe, not just the calibration points."""

from __future__ import annotations

import itertools
import random

import pytest
from specgate_sim.specmodel import (
    AcceptanceParams,
    LatencyParams,
    SpecConfig,
    build_tree,
    depth_probs,
    estimate,
    expected_accept_length,
    sample_accept_length,
    step_ms,
)

ACC = AcceptanceParams()


def _tau(cfg: SpecConfig, kind: str = "chat", context: int = 512, multiplier: float = 1.0) -> float:
    probs = depth_probs(cfg, kind, context, ACC, multiplier)
    return expected_accept_length(build_tree(cfg, probs, ACC), probs, ACC)


def test_code_and_math_prompts_accept_more_than_open_chat() -> None:
    cfg = SpecConfig("DFLASH", 8, 8, 7, 1)
    assert _tau(cfg, "code") == pytest.approx(5.3, rel=0.02)
    assert _tau(cfg, "math") == pytest.approx(5.3, rel=0.02)
    assert _tau(cfg, "chat") == pytest.approx(3.7, rel=0.02)


def test_acceptance_rises_with_budget_with_diminishing_returns() -> None:
    taus = [_tau(SpecConfig("DDTREE", 8, 8, budget, 4)) for budget in (4, 8, 12, 16, 32)]
    assert taus == sorted(taus)
    gains = [b - a for a, b in itertools.pairwise(taus)]
    assert gains[0] > gains[-1]


def test_tok_s_falls_past_budget_eight_at_block_eight() -> None:
    speeds = [estimate(SpecConfig("DDTREE", 8, 8, budget, 4)).tokens_per_s for budget in (8, 12, 16)]
    assert speeds[0] > speeds[1] > speeds[2]


def test_drafting_past_the_trained_block_gains_only_a_little() -> None:
    trained = _tau(SpecConfig("DFLASH", 8, 8, 7, 1), "code")
    deeper = _tau(SpecConfig("DFLASH", 16, 8, 15, 1), "code")
    trained_16 = _tau(SpecConfig("DFLASH", 16, 16, 15, 1), "code")
    assert trained < deeper < trained + 0.5
    assert trained_16 > deeper + 0.5


def test_topk_beyond_the_env_cap_changes_nothing() -> None:
    capped = SpecConfig("DDTREE", 8, 8, 16, 8, max_topk=2)
    assert build_tree(capped, depth_probs(capped, "chat", 512, ACC), ACC) == build_tree(
        SpecConfig("DDTREE", 8, 8, 16, 2), depth_probs(capped, "chat", 512, ACC), ACC
    )
    assert _tau(SpecConfig("DDTREE", 8, 8, 16, 8)) > _tau(capped)


def test_tree_respects_budget_and_topk() -> None:
    cfg = SpecConfig("DDTREE", 8, 8, 12, 3)
    tree = build_tree(cfg, depth_probs(cfg, "code", 512, ACC), ACC)
    assert tree.size == 12
    assert all(max(path) <= 3 for path in tree.paths)
    assert all(path[:-1] in tree.paths for path in tree.paths if len(path) > 1)
    assert tree.depth <= 7


def test_depth_bonus_makes_the_tree_deeper() -> None:
    flat = SpecConfig("DDTREE", 16, 16, 12, 4)
    deep = SpecConfig("DDTREE", 16, 16, 12, 4, depth_bonus=1.0)
    probs = depth_probs(flat, "chat", 512, ACC)
    assert build_tree(deep, probs, ACC).depth > build_tree(flat, probs, ACC).depth


def test_a_short_window_hurts_only_when_context_exceeds_it() -> None:
    windowed = SpecConfig("DDTREE", 8, 8, 16, 4, window=2048)
    plain = SpecConfig("DDTREE", 8, 8, 16, 4)
    assert _tau(windowed, context=1024) == pytest.approx(_tau(plain, context=1024))
    assert _tau(windowed, context=32768) < _tau(plain, context=32768)


def test_acceptance_multiplier_lowers_acceptance() -> None:
    cfg = SpecConfig("DDTREE", 8, 8, 8, 4)
    assert _tau(cfg, multiplier=0.7) < _tau(cfg) - 0.5


def test_sampled_acceptance_matches_its_expectation() -> None:
    cfg = SpecConfig("DDTREE", 8, 8, 12, 4)
    probs = depth_probs(cfg, "code", 512, ACC)
    tree = build_tree(cfg, probs, ACC)
    rng = random.Random(7)
    draws = [sample_accept_length(tree, probs, ACC, rng) for _ in range(20000)]
    assert all(1 <= d <= 8 for d in draws)
    assert sum(draws) / len(draws) == pytest.approx(expected_accept_length(tree, probs, ACC), rel=0.03)


def test_step_latency_grows_with_tree_batch_and_context() -> None:
    lat = LatencyParams()
    small = SpecConfig("DDTREE", 8, 8, 8, 4)
    big = SpecConfig("DDTREE", 8, 8, 32, 4)
    probs = depth_probs(small, "chat", 512, ACC)
    t_small, t_big = build_tree(small, probs, ACC), build_tree(big, probs, ACC)
    assert step_ms(big, t_big, lat) > step_ms(small, t_small, lat)
    assert step_ms(small, t_small, lat, batch=16) > step_ms(small, t_small, lat, batch=1)
    assert step_ms(small, t_small, lat, mean_context_tokens=64000) > step_ms(small, t_small, lat)


def test_no_speculation_runs_at_the_field_notes_single_request_speed() -> None:
    est = estimate(SpecConfig())
    assert est.accept_length == 1.0
    assert est.tokens_per_s == pytest.approx(97.9, rel=0.02)
