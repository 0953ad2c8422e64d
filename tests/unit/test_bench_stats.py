"""Percentiles and confidence intervals that the gate's verdicts rest on."""

from __future__ import annotations

import math

import pytest
from ansible.module_utils.specgate.gate.bench_stats import (
    mean_interval,
    percentile,
    student_t_cdf,
    student_t_quantile,
    summarize_latencies,
)

pytestmark = pytest.mark.host


def test_percentile_interpolates_like_numpy():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 90) == pytest.approx(3.7)
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 99) == 7.0


def test_percentile_of_nothing_is_none_and_bad_q_is_refused():
    assert percentile([], 50) is None
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_latency_summary_is_in_milliseconds():
    s = summarize_latencies([0.010, 0.020, 0.030])
    assert s["p50_ms"] == pytest.approx(20.0)
    assert s["mean_ms"] == pytest.approx(20.0)
    assert summarize_latencies([])["p99_ms"] is None


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706204736), (2, 4.302652730), (4, 2.776445105), (10, 2.228138852), (30, 2.042272456)],
)
def test_t_quantile_matches_published_table_at_97_5_percent(df, expected):
    assert student_t_quantile(0.975, df) == pytest.approx(expected, rel=1e-6)


def test_t_cdf_is_symmetric_and_centered():
    assert student_t_cdf(0.0, 5) == pytest.approx(0.5)
    assert student_t_cdf(1.3, 7) + student_t_cdf(-1.3, 7) == pytest.approx(1.0)
    assert student_t_quantile(0.025, 4) == pytest.approx(-2.776445105, rel=1e-6)


def test_interval_of_known_sample():
    # mean 5, sd 1 (n=4): half-width = t(0.975, 3) * 1/2 = 3.182446305 / 2
    values = [4.0, 5.0, 6.0, 5.0]
    sd = math.sqrt(sum((v - 5.0) ** 2 for v in values) / 3)
    iv = mean_interval(values, 0.95)
    assert iv.mean == pytest.approx(5.0)
    assert iv.high - iv.mean == pytest.approx(3.182446305 * sd / 2, rel=1e-6)
    assert iv.mean - iv.low == pytest.approx(iv.high - iv.mean)


def test_one_measurement_has_an_unbounded_interval():
    iv = mean_interval([4.2])
    assert iv.low == -math.inf
    assert iv.high == math.inf


def test_identical_measurements_have_a_point_interval():
    iv = mean_interval([0.9, 0.9, 0.9])
    assert iv.low == pytest.approx(0.9)
    assert iv.high == pytest.approx(0.9)


def test_wider_confidence_gives_a_wider_interval():
    values = [3.1, 3.4, 2.9, 3.3]
    assert mean_interval(values, 0.99).low < mean_interval(values, 0.90).low


def test_interval_refuses_nonsense():
    with pytest.raises(ValueError, match="at least one"):
        mean_interval([])
    with pytest.raises(ValueError, match="confidence"):
        mean_interval([1.0, 2.0], 1.5)


def test_ratio_interval_pools_both_samples_noise():
    from ansible.module_utils.specgate.gate.bench_stats import ratio_interval

    same = ratio_interval([100.0, 104.0, 98.0], [101.0, 99.0, 103.0])
    assert same.low < 1.0 < same.high
    assert same.n == 3
    # Two runs a side: pooled, 2 degrees of freedom (t 4.30), not the 1 (t 12.7) of either sample alone.
    two = ratio_interval([100.0, 104.0], [101.0, 99.0])
    assert two.high / two.low < 1.25
    assert ratio_interval([5.0, 5.0], [4.0, 4.0]).low == pytest.approx(1.25)
    assert ratio_interval([5.0], [4.0, 4.1]).high < float("inf")
    assert ratio_interval([5.0], [4.0]).high == float("inf")
    with pytest.raises(ValueError, match="positive"):
        ratio_interval([0.0, 1.0], [1.0, 2.0])
