"""Statistics for benchmark numbers: percentiles of latencies and confidence intervals over repeated runs.

Stdlib only: this runs on the host under the serving venv's Python, which has no scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method); None for no values."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be within 0..100, got {q}")
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = math.ceil(pos)
    if low == high:
        return float(ordered[low])
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summarize_latencies(values: Sequence[float]) -> dict[str, float | None]:
    """p50/p90/p99 and mean of a latency sample (seconds in, milliseconds out: what people read)."""
    ms = [v * 1000.0 for v in values]
    return {
        "mean_ms": (sum(ms) / len(ms)) if ms else None,
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
    }


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbeta) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbeta) * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """Inverse CDF of Student's t by bisection (monotone, so bisection cannot miss)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile probability must be within (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2.0


@dataclass(frozen=True)
class Interval:
    """Mean of repeated measurements with a two-sided Student-t confidence interval."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n, "confidence": self.confidence}


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Confidence interval of the mean.

    One measurement says nothing about noise, so its interval is unbounded: a gate can only call it
    inconclusive. Identical measurements (a deterministic metric) give a zero-width interval.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    if not values:
        raise ValueError("a confidence interval needs at least one measurement")
    n = len(values)
    if min(values) == max(values):
        # Summing would add rounding noise (0.8 * 3 / 3 != 0.8) that tips a value sitting on a threshold.
        point = float(values[0])
        low, high = (-math.inf, math.inf) if n == 1 else (point, point)
        return Interval(point, low, high, n, confidence)
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, -math.inf, math.inf, 1, confidence)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = student_t_quantile(0.5 + confidence / 2.0, n - 1) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half, n, confidence)


def ratio_interval(values: Sequence[float], reference: Sequence[float], confidence: float = 0.95) -> Interval:
    """Confidence interval of the ratio of ``values`` to ``reference`` (two samples), from both samples' noise.

    Two-sample Student t on the logs (the ratio of geometric means; speeds vary by a factor, not by an amount),
    with the variance pooled over both samples: measured under the same conditions they share one noise, and
    pooling gives n + m - 2 degrees of freedom where a sample of two runs alone would give one. A reference
    measured with noise so widens the interval instead of passing for an exact number. ``n`` is the number of
    ``values``. With one run on each side nothing is known about the noise: the interval is unbounded, unless
    both samples are constant (deterministic metrics), which gives a point.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    if not values or not reference:
        raise ValueError("a ratio interval needs at least one measurement on each side")
    if min(values) <= 0 or min(reference) <= 0:
        raise ValueError("a ratio interval needs positive measurements")
    n, m = len(values), len(reference)
    logs_v, logs_r = [math.log(v) for v in values], [math.log(r) for r in reference]
    mean_v, mean_r = sum(logs_v) / n, sum(logs_r) / m
    ratio = math.exp(mean_v - mean_r)
    df = n + m - 2
    if df == 0:
        return Interval(ratio, -math.inf, math.inf, n, confidence)
    if min(values) == max(values) and min(reference) == max(reference):
        return Interval(ratio, ratio, ratio, n, confidence)
    pooled = (sum((x - mean_v) ** 2 for x in logs_v) + sum((y - mean_r) ** 2 for y in logs_r)) / df
    half = student_t_quantile(0.5 + confidence / 2.0, df) * math.sqrt(pooled * (1.0 / n + 1.0 / m))
    return Interval(ratio, ratio * math.exp(-half), ratio * math.exp(half), n, confidence)
