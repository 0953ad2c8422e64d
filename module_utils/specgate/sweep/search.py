"""The opt-in search: which grid points to launch next, given the rows so far, instead of launching them all.

It launches a point only while the point could still win a use case: from the points measured so far it bounds what
each unlaunched point can score, and a point whose bound stays below the best mean measured for every use case (for
a point cheaper than that best, below the best less the pick's tolerance) is not launched. The bounds rest on three
assumptions about the space (field-notes.md), stated here and in the report:

1. Along a *line* (the points of one branch and one top-k, differing only in DDTree budget; or a DFlash chain's
   points, differing only in block size, over the tokens drafted per step) each use case's score is unimodal, with
   diminishing returns while it rises: two measured points left of a point bound it (the line through them carried
   on while they rise, the nearer one's value once they fall); two right of it bound it only when they rise (the
   peak is past them). The far side of a peak may fall steeply, so it bounds nothing.
2. The same along top-k at one budget, in log2 of top-k.
3. Between two lines over the same budgets, the ratio of their scores moves monotonically with the budget: a point is
   at most the other line's value at its budget times the larger of the two lines' ratios at the nearest budgets
   both measured on either side (or, from one side, the nearer ratio when the ratio falls toward the point).

Noise is allowed for: every measured value enters a bound raised (and the far point of a slope lowered) by one
standard error, from the runs' pooled relative spread; a ratio by two. No branch is dropped on one comparison, and a
step counts as a fall only when it is one beyond that noise. A crashed or refused point is finished and carries no
value: the bounds step over it to the next measured point past it, and the report names it.

Order: first both ends of every line (they bracket the rest of it), then the live points of the most promising line
(the one whose best measured point comes nearest the best of some use case: the likeliest to hold a winner, and once
measured along its budgets it bounds every other line through their ratio, assumption 3), nearest that line's best
measured point first (where a peak is, the bounds tighten fastest), the highest bound first among equals. `propose` is
stateless: it reads only the rows so far, so a playbook can launch one point, write its row and ask again, and a
resumed sweep continues where the rows on disk leave it.

When it stops, `Proposal.pruned` says for every point not launched how far its bound stays below the best, and
`notes` says which winners every neighbour confirmed (measured or bounded below it) and where a crash left a gap.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible.module_utils.specgate.sweep.grid import Point
from ansible.module_utils.specgate.sweep.pick import DEFAULT_TOLERANCE, pooled_spread

NOISE_WHEN_UNKNOWN = 0.05  # relative spread assumed before any point ran twice


@dataclass(frozen=True)
class Measured:
    """One use case's value of a point: the mean over its runs and their sample standard deviation."""

    mean: float
    runs: int
    spread: float = 0.0


# Per finished point, its value per use case metric; None: finished without a value (crashed on start, refused).
Scores = Mapping[str, "Mapping[str, Measured] | None"]


@dataclass(frozen=True)
class Proposal:
    points: tuple[Point, ...]  # to launch next, in order (launch the first, then ask again); empty: the search is done
    pruned: Mapping[str, str] = field(default_factory=dict)  # point not launched -> why
    notes: tuple[str, ...] = ()  # which winners their neighbours confirm, where a crash left a gap


def line_of(point: Point) -> tuple:
    """The points one curve runs through: a DDTree branch at one top-k (over its budget), or a DFlash chain's
    points that differ only in block size (over the tokens it drafts per step); any other point is a line of one."""
    if point.algorithm == "DFLASH":
        return (point.algorithm, point.window, point.parallel, point.drafter)
    return (point.branch(), point.topk or 0)


def lines_of(points: Sequence[Point]) -> dict[tuple, list[Point]]:
    """The grid's lines (line_of), each with its points in budget order."""
    lines: dict[tuple, list[Point]] = {}
    for point in points:
        lines.setdefault(line_of(point), []).append(point)
    return {key: sorted(line, key=_budget) for key, line in lines.items()}


def _budget(point: Point) -> float:
    """Where a point sits on its line: a DDTree's budget, a DFlash chain's tokens drafted per step (block size - 1)."""
    if point.algorithm == "DFLASH":
        return float((point.block_size or 1) - 1)
    return float(point.budget or 0)


def _log_topk(point: Point) -> float:
    return math.log2(point.topk or 1)


def relative_spread(scores: Scores, metric: str | None = None) -> float:
    """One run's spread relative to its mean, pooled over every measured value (pick.pooled_spread), of ``metric``
    only when given."""
    measured = [(m.mean, m.spread, m.runs) for values in scores.values() if values for name, m in values.items()
                if metric in (None, name)]  # fmt: skip
    return pooled_spread(measured, NOISE_WHEN_UNKNOWN)


def relative_noise(scores: Scores) -> float:
    """The standard error of a point's mean, relative to it: the pooled relative spread over the square root of the
    median number of runs."""
    runs = [m.runs for values in scores.values() if values for m in values.values()]
    return relative_spread(scores) / math.sqrt(statistics.median(runs) if runs else 1)


def curve_bound(at: float, measured: Sequence[tuple[float, float]], noise: float) -> float:
    """Assumptions 1 and 2: the most a unimodal curve with diminishing returns can reach at ``at``, given
    ``measured`` (coordinate, value) pairs of the same curve; inf when no two measured points lie on one side."""
    left = sorted(p for p in measured if p[0] < at)
    right = sorted(p for p in measured if p[0] > at)
    bounds = []
    if len(left) >= 2:
        (x1, f1), (x2, f2) = left[-2], left[-1]
        near, far = f2 * (1 + noise), f1 * (1 - noise)
        bounds.append(near + max((near - far) / (x2 - x1), 0.0) * (at - x2))
    if len(right) >= 2:
        (_, f3), (_, f4) = right[0], right[1]
        # Rising to the right: the peak is past the nearer one, so nothing left of it is higher. Falling to the right
        # is the curve's far side, which may fall steeply from a peak (convex), so it bounds nothing to its left.
        if f3 * (1 + noise) <= f4 * (1 - noise):
            bounds.append(f3 * (1 + noise))
    return min(bounds, default=math.inf)


def ratio_bound(at: float, mine: Mapping[float, float], theirs: Mapping[float, float], noise: float) -> float:
    """Assumption 3: the most a point of one line can reach at budget ``at``, from another line measured there and
    the two lines' ratio at the budgets both measured; inf when the ratio is not bracketed or falling toward it."""
    if at not in theirs:
        return math.inf
    ratio = {x: mine[x] / theirs[x] for x in mine if x in theirs and theirs[x] > 0}
    below = sorted(x for x in ratio if x < at)
    above = sorted(x for x in ratio if x > at)
    if below and above:
        r = max(ratio[below[-1]], ratio[above[0]])
    elif len(below) >= 2 and ratio[below[-2]] >= ratio[below[-1]]:
        r = ratio[below[-1]]
    elif len(above) >= 2 and ratio[above[1]] >= ratio[above[0]]:
        r = ratio[above[0]]
    else:
        return math.inf
    return theirs[at] * r * (1 + 2 * noise)


class _Space:
    """The grid and what has been measured on it, for one use case metric at a time."""

    def __init__(self, points: Sequence[Point], scores: Scores) -> None:
        self.points = list(points)
        self.scores = scores
        self.noise = relative_noise(scores)
        self.lines = lines_of(self.points)
        self._best: dict[str, tuple[Point, float] | None] = {}
        self._promise: dict[tuple, float] = {}
        self.metrics = sorted({m for values in scores.values() if values for m in values})

    def value(self, point: Point, metric: str) -> float | None:
        values = self.scores.get(point.name)
        return values[metric].mean if values and metric in values else None

    def best(self, metric: str) -> tuple[Point, float] | None:
        """The best measured point of ``metric`` and its value (worked out once per proposal)."""
        if metric not in self._best:
            measured = [(p, v) for p in self.points if (v := self.value(p, metric)) is not None]
            self._best[metric] = max(measured, key=lambda pv: pv[1], default=None)
        return self._best[metric]

    def bound(self, point: Point, metric: str) -> float:
        line = self.lines[line_of(point)]
        along_budget = [(_budget(q), v) for q in line if q is not point and (v := self.value(q, metric)) is not None]
        across_topk = [(_log_topk(q), v) for q in self.points if q is not point and q.branch() == point.branch()
                       and _budget(q) == _budget(point) and (v := self.value(q, metric)) is not None]  # fmt: skip
        bounds = [curve_bound(_budget(point), along_budget, self.noise),
                  curve_bound(_log_topk(point), across_topk, self.noise)]  # fmt: skip
        mine = {_budget(q): v for q in line if (v := self.value(q, metric)) is not None}
        others: dict[tuple, dict[float, float]] = {}
        for q in self.points:
            if line_of(q) != line_of(point) and (v := self.value(q, metric)) is not None:
                others.setdefault(line_of(q), {})[_budget(q)] = v
        bounds += [ratio_bound(_budget(point), mine, theirs, self.noise) for theirs in others.values()]
        return min(bounds)

    def promise(self, point: Point) -> float:
        """How near the best of some use case the best measured point of ``point``'s line comes (its share of that
        best; 0 while nothing on the line has a value), worked out once per line and proposal."""
        line = line_of(point)
        if line not in self._promise:
            shares = [v / top[1] for metric in self.metrics if (top := self.best(metric)) is not None and top[1] > 0
                      for q in self.lines[line] if (v := self.value(q, metric)) is not None]  # fmt: skip
            self._promise[line] = max(shares, default=0.0)
        return self._promise[line]

    def steps_from_best(self, point: Point, metric: str | None) -> int:
        """How many points along its line ``point`` is from the line's best measured point for ``metric``."""
        line = self.lines[line_of(point)]
        measured = [q for q in line if metric is not None and self.value(q, metric) is not None]
        if not measured:
            return 0
        top = max(measured, key=lambda q: self.value(q, metric) or 0.0)
        return abs(line.index(point) - line.index(top))

    def reach(self, point: Point, tolerance: float) -> tuple[float, str | None]:
        """The highest bound of ``point`` against what it must beat in each use case (inf before anything ran): the
        best measured, or, for a point cheaper than that best, the best less the tolerance (the pick takes the
        cheapest config within it)."""
        best = (-math.inf, None)
        for metric in self.metrics or ["_"]:
            top = self.best(metric)
            if top is None or top[1] <= 0:
                return math.inf, None
            bar = top[1] * (1 - tolerance) if point.cost() < top[0].cost() else top[1]
            share = self.bound(point, metric) / bar
            if share > best[0]:
                best = (share, metric)
        return best


def _line_ends(points: Sequence[Point]) -> list[Point]:
    ends = []
    for line in lines_of(points).values():
        ends += [p for p in (line[0], line[-1]) if p not in ends]
    return ends


def neighbours(point: Point, points: Sequence[Point]) -> list[Point]:
    """The next point either way along the budget (same line) and along top-k (same branch and budget)."""
    line = sorted((q for q in points if line_of(q) == line_of(point)), key=_budget)
    across = sorted((q for q in points if q.branch() == point.branch() and _budget(q) == _budget(point)),
                    key=_log_topk)  # fmt: skip
    out = []
    for axis in (line, across):
        i = axis.index(point)
        out += [q for q in axis[max(i - 1, 0):i] + axis[i + 1:i + 2] if q not in out]
    return out


def propose(points: Sequence[Point], scores: Scores, tolerance: float = DEFAULT_TOLERANCE) -> Proposal:
    """What to launch next from ``scores`` (per finished point, per use case metric); empty when every unlaunched
    point is bounded below what it must beat in every use case."""
    space = _Space(points, scores)
    todo = [p for p in points if p.name not in scores]
    reach = {p.name: space.reach(p, tolerance) for p in todo}
    live = [p for p in todo if reach[p.name][0] > 1.0]
    if live:
        ends = [p for p in _line_ends(points) if p in live]
        if ends:
            return Proposal((ends[0],))
        return Proposal((min(live, key=lambda p: (-space.promise(p), space.steps_from_best(p, reach[p.name][1]),
                                                  -reach[p.name][0], p.cost())),))  # fmt: skip
    pruned = {p.name: f"bounded at {reach[p.name][0]:.1%} of the best {reach[p.name][1]} it must beat, and lower "
                      "on the other use cases" for p in todo}  # fmt: skip
    return Proposal((), pruned, tuple(_notes(space, todo, reach)))


def _notes(space: _Space, todo: Sequence[Point], reach: Mapping[str, tuple[float, str | None]]) -> list[str]:
    notes = []
    for metric in space.metrics:
        top = space.best(metric)
        if top is None:
            continue
        winner, value = top
        around = neighbours(winner, space.points)
        bounded = [q for q in around if q in todo]
        gaps = [q.name for q in around if q.name in space.scores and space.scores[q.name] is None]
        line = f"{metric}: the best, {winner.name} ({value:.4g}), "
        line += ("has every neighbour measured" if not bounded else
                 "is confirmed by its neighbours: " + ", ".join(
                     f"{q.name} bounded at {space.bound(q, metric) / value:.1%}" for q in bounded))  # fmt: skip
        if gaps:
            line += f"; {', '.join(gaps)} crashed or was refused beside it, and the bounds stepped over it"
        notes.append(line)
    return notes
