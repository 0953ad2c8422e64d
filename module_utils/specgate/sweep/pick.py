"""A winner per use case: the cheapest config confidently within a tolerance of the best mean over runs.

The score is the plain mean over runs, with its ~95 % interval (1.96 standard errors) saying which configs are within
noise of the winner. Measured on generated surfaces with independent noise per run (scripts/bench_sweep_search.py),
the mean picked a config within 1 % of the true best more often than vLLM's `tune_speculative_k` rule (median minus
1.4826 · MAD), which penalises a config for its spread: with three runs the MAD is itself mostly noise, and a lucky
tight draw won. A config cheaper than the best (a smaller verify step, then fewer branches, then a shallower
drafter) wins when it is within ``tolerance`` (default 1 %) of the best with 95 % confidence: its mean less 1.645
standard errors of the difference (each from the runs' pooled relative spread) still within it. A cheaper config
merely measured within tolerance was, on those surfaces, often truly further below, and the pick lost to the plain
max of means; with this rule it never does, and where runs are tight the cheaper config still wins. At equal cost
the higher score wins, then the config better on the other use cases (so a config no better anywhere never wins a
tie), then the earlier one. Every metric here is higher-is-better.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Z_95 = 1.96  # a normal's two-sided 95 % quantile: the interval a mean is within noise by
Z_95_ONE_SIDED = 1.645  # how far below its mean a config may truly be, with 95 % confidence
DEFAULT_TOLERANCE = 0.01


@dataclass(frozen=True)
class Scored:
    name: str
    mean: float
    dispersion: float  # half-width of the ~95 % interval of the mean (1.96 standard errors); 0 with one run
    runs: int

    @property
    def score(self) -> float:
        return self.mean


@dataclass(frozen=True)
class Pick:
    winner: str | None
    score: float | None
    best: str | None  # the highest score, which the winner may not be (it is the cheapest within tolerance)
    best_score: float | None
    within_tolerance: tuple[str, ...] = ()  # every config confidently within tolerance of the best, winner included
    within_noise: tuple[str, ...] = ()  # configs whose ~95 % interval overlaps the winner's
    ties: tuple[str, ...] = ()  # configs as cheap as the winner and within tolerance
    single_run: bool = False  # some candidate ran once: no noise estimate
    notes: tuple[str, ...] = field(default=())


def score(name: str, values: Sequence[float]) -> Scored:
    if not values:
        raise ValueError(f"config {name}: no value to score")
    mean = statistics.fmean(values)
    error = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return Scored(name, mean, Z_95 * error, len(values))


def pooled_spread(measured: Iterable[tuple[float, float, int]], unknown: float = 0.0) -> float:
    """One run's spread relative to its mean, pooled (the median) over ``measured`` (mean, sample standard deviation,
    runs) that ran more than once: three runs say little about one config's own spread. ``unknown`` when none did.
    The one statement of the sweep's noise: the pick's confidence and the search's bounds both read it."""
    spreads = [sd / mean for mean, sd, runs in measured if runs > 1 and mean > 0]
    return statistics.median(spreads) if spreads else unknown


def pick(
    values: Mapping[str, Sequence[float]],
    cost: Mapping[str, tuple] | None = None,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    elsewhere: Mapping[str, float] | None = None,
) -> Pick:
    """``values``: per config (in sweep order), its metric per run. ``cost``: per config, a sortable cost (absent:
    all equal). ``elsewhere``: per config, how good it is on the other use cases (higher is better; breaks ties)."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance {tolerance!r} must be a fraction in [0, 1), e.g. 0.01 for 1 %")
    scored = [score(name, runs) for name, runs in values.items() if runs]
    if not scored:
        return Pick(None, None, None, None)
    order = {s.name: i for i, s in enumerate(scored)}
    cost = cost or {}
    elsewhere = elsewhere or {}
    best = max(scored, key=lambda s: (s.score, -order[s.name]))
    floor = best.score - abs(best.score) * tolerance
    spread = pooled_spread((statistics.fmean(r), statistics.stdev(r), len(r)) for r in values.values() if len(r) > 1)

    def confidently_close(s: Scored) -> bool:
        """Within tolerance of the best; for a config cheaper than the best, with 95 % confidence."""
        if s.score < floor:
            return False
        if cost.get(s.name, ()) >= cost.get(best.name, ()):
            return True  # it wins only on an equal score (the rank below), never on a lower one
        error = spread * math.sqrt(s.mean**2 / s.runs + best.mean**2 / best.runs)
        return s.score - Z_95_ONE_SIDED * error >= floor

    close = [s for s in scored if confidently_close(s)]

    def rank(s: Scored) -> tuple:
        return (cost.get(s.name, ()), -s.score, -elsewhere.get(s.name, 0.0), order[s.name])

    winner = min(close, key=rank)
    if winner.score == best.score:  # an equal score: the best is the one the tie-break chose, not the earlier
        best = winner
    ties = tuple(s.name for s in close if s is not winner and cost.get(s.name, ()) == cost.get(winner.name, ()))
    noise = tuple(s.name for s in scored if s is not winner
                  and abs(s.mean - winner.mean) <= s.dispersion + winner.dispersion)  # fmt: skip
    notes = []
    if winner is not best:
        notes.append(f"{best.name} scored highest ({best.score:.4g}); {winner.name} is cheaper and within "
                     f"{tolerance:.0%} ({winner.score:.4g})")  # fmt: skip
    if ties:
        notes.append(f"as cheap and within {tolerance:.0%}: {', '.join(ties)}")
    if noise:
        notes.append(f"within noise of the winner: {', '.join(noise)}")
    single = any(s.runs == 1 for s in scored)
    if single:
        notes.append("one run only for some configs: no noise estimate for them")
    return Pick(winner.name, winner.score, best.name, best.score, tuple(s.name for s in close), noise, ties, single,
                tuple(notes))
