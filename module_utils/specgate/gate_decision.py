"""The gate's decision, in the vocabulary of metric-gated progressive delivery (Argo Rollouts analysis).

Each gated metric is measured once per benchmark run. A metric is *Successful* when its whole
confidence interval satisfies the success condition, *Failed* when the whole interval violates it (or
more single measurements failed than the failure limit allows), and *Inconclusive* while the interval
still straddles the threshold. The analysis is Failed if any metric failed, else Inconclusive if any is,
else Successful. Re-runs are asked for while the analysis is Inconclusive and runs remain; what an
Inconclusive end means is a policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ansible.module_utils.specgate.bench_stats import Interval, mean_interval

SUCCESSFUL = "Successful"
FAILED = "Failed"
INCONCLUSIVE = "Inconclusive"

POLICY_KEEP_KNOWN_GOOD = "keep_known_good"
POLICY_PROMOTE = "promote"
INCONCLUSIVE_POLICIES = (POLICY_KEEP_KNOWN_GOOD, POLICY_PROMOTE)

ACTION_PROMOTE = "promote"
ACTION_ROLLBACK = "rollback"


@dataclass(frozen=True)
class Condition:
    """One gated metric: success means every run's value ``>= threshold`` (or ``<=`` when ``higher_is_better``
    is False), judged through the interval of the mean over runs."""

    name: str
    description: str
    threshold: float
    values: tuple[float, ...]
    variable: str
    higher_is_better: bool = True
    failure_limit: int | None = None

    def satisfied_by(self, value: float) -> bool:
        return value >= self.threshold if self.higher_is_better else value <= self.threshold


@dataclass(frozen=True)
class MetricResult:
    condition: Condition
    interval: Interval
    failed_measurements: int
    phase: str
    reason: str

    def as_dict(self) -> dict:
        c = self.condition
        return {
            "name": c.name,
            "description": c.description,
            "variable": c.variable,
            "success_condition": f"{'>=' if c.higher_is_better else '<='} {c.threshold:g}",
            "threshold": c.threshold,
            "higher_is_better": c.higher_is_better,
            "measurements": list(c.values),
            "failed_measurements": self.failed_measurements,
            "failure_limit": c.failure_limit,
            "interval": _finite(self.interval.as_dict()),
            "phase": self.phase,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Analysis:
    phase: str
    metrics: tuple[MetricResult, ...]
    skipped: tuple[dict, ...] = field(default_factory=tuple)

    @property
    def runs(self) -> int:
        return max((m.interval.n for m in self.metrics), default=0)

    def as_dict(self) -> dict:
        return {
            "phase": self.phase,
            "runs": self.runs,
            "metrics": [m.as_dict() for m in self.metrics],
            "skipped": list(self.skipped),
        }


def _finite(d: dict) -> dict:
    """JSON has no infinity: an unbounded interval end is written as null."""
    return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


def _fmt(value: float) -> str:
    return "unbounded" if math.isinf(value) else f"{value:.3g}"


def evaluate_metric(condition: Condition, confidence: float) -> MetricResult:
    """Phase of one gated metric from its per-run measurements."""
    if not condition.values:
        raise ValueError(f"gated metric {condition.name!r} has no measurements")
    interval = mean_interval(condition.values, confidence)
    failed = sum(1 for v in condition.values if not condition.satisfied_by(v))
    good_side, bad_side = (
        (interval.low >= condition.threshold, interval.high < condition.threshold)
        if condition.higher_is_better
        else (interval.high <= condition.threshold, interval.low > condition.threshold)
    )
    ci = f"{confidence:.0%} CI {_fmt(interval.low)} to {_fmt(interval.high)} over {interval.n} run(s)"
    if condition.failure_limit is not None and failed > condition.failure_limit:
        phase = FAILED
        reason = f"{failed} of {interval.n} measurements failed, more than the failure limit {condition.failure_limit}"
    elif good_side:
        phase, reason = SUCCESSFUL, f"whole interval meets the threshold ({ci})"
    elif bad_side:
        phase, reason = FAILED, f"whole interval misses the threshold ({ci})"
    else:
        phase, reason = INCONCLUSIVE, f"interval straddles the threshold ({ci})"
    return MetricResult(condition, interval, failed, phase, reason)


def analyze(conditions: Sequence[Condition], confidence: float, skipped: Sequence[dict] = ()) -> Analysis:
    """Combine metric phases: any Failed fails the analysis; else any Inconclusive makes it Inconclusive."""
    results = tuple(evaluate_metric(c, confidence) for c in conditions)
    phases = {r.phase for r in results}
    if FAILED in phases:
        phase = FAILED
    elif INCONCLUSIVE in phases:
        phase = INCONCLUSIVE
    else:
        phase = SUCCESSFUL
    return Analysis(phase, results, tuple(skipped))


def needs_more_runs(analysis: Analysis, runs_done: int, max_runs: int) -> bool:
    """Re-run only while the outcome is still open and the run budget allows it."""
    return analysis.phase == INCONCLUSIVE and runs_done < max_runs


def action_for(phase: str, inconclusive_policy: str) -> str:
    """What the role does with the candidate release."""
    if inconclusive_policy not in INCONCLUSIVE_POLICIES:
        raise ValueError(
            f"spec_gate_inconclusive_policy must be one of {', '.join(INCONCLUSIVE_POLICIES)}, "
            f"got {inconclusive_policy!r}"
        )
    if phase == SUCCESSFUL:
        return ACTION_PROMOTE
    if phase == INCONCLUSIVE and inconclusive_policy == POLICY_PROMOTE:
        return ACTION_PROMOTE
    return ACTION_ROLLBACK


def failure_paragraph(analysis: Analysis, release: str, known_good: str | None) -> str:
    """One paragraph a person reads in the failed play: metric, threshold, measured value, what was done."""
    bad = [m for m in analysis.metrics if m.phase != SUCCESSFUL]
    parts = []
    for m in bad:
        c = m.condition
        relation = "at least" if c.higher_is_better else "at most"
        parts.append(
            f"{c.description} measured {m.interval.mean:.3g} ({m.reason}); the gate requires {relation} "
            f"{c.threshold:g} ({c.variable}) — {m.phase}"
        )
    restored = (
        f"Release {known_good} (known-good) was restored."
        if known_good
        else "No known-good release exists to restore; the candidate is left active."
    )
    what = "failed" if analysis.phase == FAILED else "was inconclusive (spec_gate_inconclusive_policy: keep_known_good)"
    return f"Gate {what} for release {release}: " + "; ".join(parts) + f". {restored}"
