"""FROZEN REFERENCE, not product code: spec_sweep's search and pick as v2 shipped them (module_utils/specgate/sweep/
search.py and pick.py before Sweep v3), kept so scripts/bench_sweep_search.py measures v3 against v2 on the same
surfaces. Nothing in roles/, library/ or module_utils/ imports it.

The opt-in search (v2): which grid points to launch next, given the rows so far, instead of launching them all.

It uses the space's structure (field-notes.md): within a branch (the points that differ only in DDTree budget and
top-k) acceptance rises with budget and top-k while the verify step's cost rises too, so each use case's score is
taken as unimodal with diminishing returns along those ordered axes. Per branch and use case it climbs from the
cheapest point, one axis at a time, and stops a direction at the first point no better than the current one (the
optimum is bracketed) or once the concave bound (the last two points' slope carried on) cannot reach within the
tolerance of the best score any branch has measured. A branch that another branch beats or ties on every use case
at a point both measured, at no more cost, is dominated and not expanded further.

`propose` is stateless: it reads only the results so far, so a playbook can launch its first point, write the row,
and call it again, and a resumed sweep continues where the rows on disk leave it. Branches are served round-robin
(fewest measured first), so dominance shows before a branch is climbed to its end.

What it can miss, said in `Proposal.notes`: a curve flat within noise (a step that is no better stops the climb) or
one that is not unimodal, and a branch pruned on one shared point whose other points would have won.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible.module_utils.specgate.sweep.grid import ORDERED_AXES, Point
from ansible.module_utils.specgate.sweep.pick import DEFAULT_TOLERANCE

FAILED = -math.inf  # a point that was rejected or crashed: measured, and worse than anything


@dataclass(frozen=True)
class Proposal:
    points: tuple[Point, ...]  # to launch next, in order (launch the first, then ask again); empty: the search is done
    pruned: Mapping[str, str] = field(default_factory=dict)  # branch label -> why it is not expanded
    notes: tuple[str, ...] = ()  # where the search could have missed a winner


def branch_label(point: Point) -> str:
    algorithm, block, window, parallel, drafter = point.branch()
    label = f"{algorithm.lower()} bs{block} window {window or 'none'}"
    if parallel:
        label += f" {parallel}"
    if drafter is not None:
        label += f" drafter {drafter.repo}"
    return label


def _axis_value(point: Point, axis: str) -> int:
    return getattr(point, axis) or 0


def neighbour(point: Point, branch: Sequence[Point], axis: str, direction: int) -> Point | None:
    """The next point along ``axis`` (up: +1, down: -1), the other ordered axes as close to this point's as the
    branch allows (a constraint may tie them, e.g. top-k = budget / 4)."""
    here = _axis_value(point, axis)
    others = [a for a in ORDERED_AXES if a != axis]
    ahead = [q for q in branch if (_axis_value(q, axis) - here) * direction > 0]
    if not ahead:
        return None
    step = min(abs(_axis_value(q, axis) - here) for q in ahead)
    nearest = [q for q in ahead if abs(_axis_value(q, axis) - here) == step]
    return min(nearest, key=lambda q: (sum(abs(_axis_value(q, a) - _axis_value(point, a)) for a in others), q.cost()))


def _bounded_out(branch: Sequence[Point], current: Point, nxt: Point, axis: str, *, direction: int,
                 score: Mapping[str, float], incumbent: float, tolerance: float) -> bool:  # fmt: skip
    """Whether, with diminishing returns along ``axis``, ``nxt`` cannot come within the tolerance of the incumbent."""
    behind = neighbour(current, branch, axis, -direction)
    if behind is None or behind.name not in score or score[behind.name] == FAILED or incumbent == FAILED:
        return False
    here, there = _axis_value(current, axis), _axis_value(behind, axis)
    slope = (score[current.name] - score[behind.name]) / abs(here - there)
    bound = score[current.name] + slope * abs(_axis_value(nxt, axis) - here)
    return bound < incumbent - abs(incumbent) * tolerance


def climb(branch: Sequence[Point], score: Mapping[str, float], incumbent: float, tolerance: float) -> Point | None:
    """The next point this use case's climb in this branch needs, or None when its optimum is bracketed."""
    current = min(branch, key=Point.cost)
    if current.name not in score:
        return current
    moved = True
    while moved:
        moved = False
        for axis in ORDERED_AXES:
            for direction in (1, -1):
                while True:
                    nxt = neighbour(current, branch, axis, direction)
                    if nxt is None:
                        break
                    if nxt.name not in score:
                        if _bounded_out(branch, current, nxt, axis, direction=direction, score=score,
                                        incumbent=incumbent, tolerance=tolerance):
                            break
                        return nxt
                    if score[nxt.name] > score[current.name]:
                        current, moved = nxt, True
                    else:
                        break
    return None


def dominated_by(
    branch: Sequence[Point], other: Sequence[Point], scores: Mapping[str, Mapping[str, float]]
) -> str | None:
    """A point both branches measured where ``other`` is at least as good on every use case, better on one, and
    no dearer: the name of ``other``'s point, else None."""
    theirs = {q.coords(): q for q in other if q.name in scores}
    for mine in branch:
        rival = theirs.get(mine.coords())
        if rival is None or mine.name not in scores or rival.cost() > mine.cost():
            continue
        a, b = scores[mine.name], scores[rival.name]
        if FAILED in a.values() or FAILED in b.values():  # a crash says nothing about the rest of either branch
            continue
        if all(b[u] >= a[u] for u in a) and any(b[u] > a[u] for u in a):
            return rival.name
    return None


def propose(
    points: Sequence[Point], scores: Mapping[str, Mapping[str, float]], tolerance: float = DEFAULT_TOLERANCE
) -> Proposal:
    """``scores``: per finished point, its noise-aware score per use case metric (FAILED where it did not run)."""
    branches: dict[tuple, list[Point]] = {}
    for point in points:
        branches.setdefault(point.branch(), []).append(point)
    use_cases = sorted({u for s in scores.values() for u in s}) or ["_"]
    incumbents = {u: max((s[u] for s in scores.values()), default=FAILED) for u in use_cases}
    pruned: dict[str, str] = {}
    live = []
    for key, branch in branches.items():
        rival = next((d for other_key, other in branches.items() if other_key != key
                      for d in [dominated_by(branch, other, scores)] if d), None)  # fmt: skip
        if rival is not None:
            pruned[branch_label(branch[0])] = f"dominated on every use case by {rival} at the same budget and top-k"
            continue
        live.append(branch)
    live.sort(key=lambda b: sum(p.name in scores for p in b))
    wanted: list[Point] = []
    for branch in live:
        for u in use_cases:
            per_point = {name: s[u] for name, s in scores.items() if u in s}
            nxt = climb(branch, per_point, incumbents[u], tolerance)
            if nxt is not None:
                if nxt not in wanted:
                    wanted.append(nxt)
                break
    notes = tuple(_flat_notes(branches, scores, tolerance)) if not wanted else ()
    return Proposal(tuple(wanted), pruned, notes)


def _flat_notes(branches: Mapping[tuple, Sequence[Point]], scores: Mapping[str, Mapping[str, float]],
                tolerance: float) -> list[str]:  # fmt: skip
    """Where a climb stopped on a step within the tolerance: the curve was flat there, a later rise was not seen."""
    notes = []
    for branch in branches.values():
        measured = [p for p in branch if p.name in scores]
        for p in measured:
            for axis in ORDERED_AXES:
                q = neighbour(p, branch, axis, 1)
                if q is None or q.name in scores:
                    continue
                for u, value in scores[p.name].items():
                    behind = neighbour(p, branch, axis, -1)
                    if behind is None or behind.name not in scores or value == FAILED:
                        continue
                    previous = scores[behind.name][u]
                    if previous != FAILED and abs(value - previous) <= abs(previous) * tolerance:
                        notes.append(f"{u}: flat within {tolerance:.0%} from {behind.name} to {p.name}; {q.name} "
                                     "was not launched and could be better if the curve rises again")
    return notes


# --- v2's scores and pick (pick.py before v3: the median less 1.4826 MAD, the cheapest within tolerance) ---

MAD_TO_SIGMA = 1.4826


def robust_score(values: Sequence[float]) -> float:
    import statistics

    median = statistics.median(values)
    mad = statistics.median([abs(v - median) for v in values])
    return median - (MAD_TO_SIGMA * mad if len(values) > 1 else 0.0)


def v2_scores(rows: Mapping[str, Mapping], metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per finished row, v2's score per metric; FAILED where it did not run."""
    out: dict[str, dict[str, float]] = {}
    for name, row in rows.items():
        if row.get("status") != "ok":
            out[name] = {m: FAILED for m in metrics}
        else:
            out[name] = {m: robust_score(row["per_run"][m]) for m in metrics}
    return out


def v2_pick(rows: Mapping[str, Mapping], metric: str, tolerance: float) -> str | None:
    """v2's winner of one metric: the cheapest within tolerance of the best robust score (then the higher score)."""
    scored = {n: robust_score(r["per_run"][metric]) for n, r in rows.items() if r.get("status") == "ok"}
    if not scored:
        return None
    best = max(scored.values())
    close = [n for n, v in scored.items() if v >= best - abs(best) * tolerance]
    return min(close, key=lambda n: (tuple(rows[n]["cost"]), -scored[n]))
