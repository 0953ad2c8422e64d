"""The gate's decision, in the vocabulary of metric-gated progressive delivery (Argo Rollouts analysis).

Each gated metric is measured once per benchmark run. A metric is *Successful* when its whole
confidence interval satisfies the success condition, *Failed* when the whole interval violates it (or
more single measurements failed than the failure limit allows), and *Inconclusive* while the interval
still straddles the threshold. The analysis is Failed if any metric failed, else Inconclusive if any is,
else Successful. Re-runs are asked for while the analysis is Inconclusive and runs remain; what an
Inconclusive end means is a policy.

A metric relative to a reference (the candidate's speed over known-good's) is judged through the interval of
the ratio of the two samples' means, so the reference's own noise counts: a regression is reported only when
the whole interval lies below the threshold, i.e. when it exceeds the measured noise. Such a metric
(``fail_only_beyond_noise``) that is still Inconclusive once the runs are spent resolves to Successful when its
interval holds 1 (the data are consistent with no change at all: an identical release lands there 95 % of the
time, whichever side of the threshold its mean fell on); an interval wholly below 1 but not wholly below the
threshold (slower than known-good for sure, by more than allowed or not) stays Inconclusive and the
inconclusive policy decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ansible.module_utils.specgate.gate.bench_stats import Interval, mean_interval, ratio_interval

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
    # Set: the metric is mean(values) / mean(reference), its interval from both samples' noise, and single
    # runs are not counted against a failure limit (one slow run is noise).
    reference: tuple[float, ...] = ()
    reference_label: str = ""
    # Inconclusive when the runs are spent resolves to Successful while the ratio's interval holds 1 (no change
    # is as likely as the miss); wholly below 1 it stays Inconclusive (the policy decides).
    fail_only_beyond_noise: bool = False

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
        extra = (
            {"reference_measurements": list(c.reference), "reference": c.reference_label} if c.reference else {}
        )
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
            **extra,
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


def evaluate_metric(condition: Condition, confidence: float, final: bool = False) -> MetricResult:
    """Phase of one gated metric from its per-run measurements; ``final`` once no more runs will be taken."""
    if not condition.values:
        raise ValueError(f"gated metric {condition.name!r} has no measurements")
    if condition.reference:
        interval = ratio_interval(condition.values, condition.reference, confidence)
        failed = 0
    else:
        interval = mean_interval(condition.values, confidence)
        failed = sum(1 for v in condition.values if not condition.satisfied_by(v))
    good_side, bad_side = (
        (interval.low >= condition.threshold, interval.high < condition.threshold)
        if condition.higher_is_better
        else (interval.high <= condition.threshold, interval.low > condition.threshold)
    )
    ci = f"{confidence:.0%} CI {_fmt(interval.low)} to {_fmt(interval.high)} over {interval.n} run(s)"
    if condition.reference:
        ci += f" against {len(condition.reference)} of {condition.reference_label or 'the reference'}"
    if condition.failure_limit is not None and failed > condition.failure_limit and not condition.reference:
        phase = FAILED
        reason = f"{failed} of {interval.n} measurements failed, more than the failure limit {condition.failure_limit}"
    elif good_side:
        phase, reason = SUCCESSFUL, f"whole interval meets the threshold ({ci})"
    elif bad_side:
        phase, reason = FAILED, f"whole interval misses the threshold ({ci})"
    elif final and condition.fail_only_beyond_noise and (interval.high >= 1.0 if condition.higher_is_better
                                                         else interval.low <= 1.0):
        phase = SUCCESSFUL
        reason = (
            f"no regression beyond the measured noise once the runs were spent: the interval straddles the "
            f"threshold and holds 1, no change ({ci})"
        )
    else:
        phase, reason = INCONCLUSIVE, f"interval straddles the threshold ({ci})"
    return MetricResult(condition, interval, failed, phase, reason)


def analyze(
    conditions: Sequence[Condition], confidence: float, skipped: Sequence[dict] = (), final: bool = False
) -> Analysis:
    """Combine metric phases: any Failed fails the analysis; else any Inconclusive makes it Inconclusive.
    ``final``: no more runs will be taken (metrics that fail only beyond the noise then settle)."""
    results = tuple(evaluate_metric(c, confidence, final) for c in conditions)
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
    """One paragraph a person reads in the failed play: metric, threshold, measured value, what was done.

    A re-gate of the known-good release itself (``release == known_good``) restores nothing: that release keeps
    serving and stays known-good, and its passing record is kept (the re-gate is stored beside it)."""
    bad = [m for m in analysis.metrics if m.phase != SUCCESSFUL]
    parts = []
    for m in bad:
        c = m.condition
        relation = "at least" if c.higher_is_better else "at most"
        parts.append(
            f"{c.description} measured {m.interval.mean:.3g} ({m.reason}); the gate requires {relation} "
            f"{c.threshold:g} ({c.variable}) — {m.phase}"
        )
    if known_good and known_good == release:
        restored = (
            f"Release {release} is the known-good release itself (re-gated with spec_gate_regate): it keeps serving "
            "and stays known-good, its passing gate.json is kept, and this result is stored beside it as "
            "gate-regate-<time>.json. Nothing on the host was changed."
        )
    elif known_good:
        restored = f"Release {known_good} (known-good) was restored."
    else:
        restored = "No known-good release exists to restore; the candidate is left active."
    what = "failed" if analysis.phase == FAILED else "was inconclusive (spec_gate_inconclusive_policy: keep_known_good)"
    return f"Gate {what} for release {release}: " + "; ".join(parts) + f". {restored}"
