"""Repeats while launched: more runs of a point's deciding cells before its engine stops, where its measurement
leaves a use case's pick undecided, or where it leads a use case.

A launch costs a load (minutes to tens of minutes on a real host); one more run of the few cells a use case is
judged on costs seconds to a minute. So when a point, just benchmarked, is within noise of what it must beat for a
use case (the best measured so far; for a cheaper point the best less the pick's tolerance, since the pick takes the
cheapest config within it; for a dearer one the best plus it), its deciding cells run again while the engine still
serves: doubling the runs each round, up to ``max_repeats`` more, and stopping as soon as the comparison is decided.
A point that leads a use case takes its repeats too, decided or not: every later point is judged against its mean,
so a lucky three-run lead would otherwise stand (on the generated surfaces, scripts/bench_sweep_search.py, this
raised the share of picks within 1 % of the true best from about 0.89 to 0.91 - 0.95 at 9 repeats).
Noise is the runs' pooled relative spread of that use case (search.relative_spread), not the point's own three-run
spread, which is itself mostly noise. The points measured earlier cannot be measured again without a relaunch: their
own runs enter the comparison's noise, so a point close to a three-run incumbent spends its repeats and stays "within
noise" in the report where the pick still cannot tell them apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ansible.module_utils.specgate.sweep.pick import Z_95
from ansible.module_utils.specgate.sweep.resume import search_scores
from ansible.module_utils.specgate.sweep.search import Measured, relative_spread
from ansible.module_utils.specgate.sweep.sweep_report import USE_CASES

DEFAULT_MAX_REPEATS = 9


def more_runs(runs: int, left: int) -> int:
    """A round's runs: as many as the use case has (doubling them), within the ``left`` of its budget."""
    return max(min(left, runs), 0)


def repeat_rounds(runs: int, max_repeats: int) -> int:
    """The most rounds a point can take while it serves: from ``runs`` (the benchmark's), each round doubling its
    runs (more_runs) until ``max_repeats`` more are spent. 0 with repeats off."""
    rounds, left = 0, max(max_repeats, 0)
    while runs > 0 and left > 0:
        step = more_runs(runs, left)
        runs, left, rounds = runs + step, left - step, rounds + 1
    return rounds


def _bar(mine: tuple, theirs: tuple, best: float, tolerance: float) -> float:
    """What a point must reach to win against the best other config: the pick takes the cheapest within tolerance."""
    if mine < theirs:
        return best * (1 - tolerance)
    if mine > theirs:
        return best / (1 - tolerance)
    return best


def undecided(mine: Measured, theirs: Measured, bar: float, spread: float) -> bool:
    """The point's mean is within noise of ``bar`` (``theirs`` is the config it is compared with: its runs are
    noise too): a 95 % interval of the difference, each mean's standard error from the pooled relative spread."""
    error = spread * math.sqrt(mine.mean**2 / mine.runs + theirs.mean**2 / max(theirs.runs, 1))
    return abs(mine.mean - bar) <= Z_95 * error


def repeats_wanted(row: Mapping, finished: Mapping[str, Mapping], *, max_repeats: int = DEFAULT_MAX_REPEATS,
                   tolerance: float = 0.01) -> dict[str, int]:  # fmt: skip
    """Per use case metric (sweep_report.USE_CASES) whose pick ``row``'s point leaves undecided against the other
    ``finished`` rows (name -> row, as the sweep reads them), how many more runs of its deciding cells to take now:
    as many as it has (doubling), within ``max_repeats`` more in all (``row['repeats']`` counts those taken); a point
    leading a use case repeats it too. Empty: nothing to repeat (decided and behind, the first point of a use case,
    the budget spent, or repeats off with 0)."""
    if max_repeats <= 0 or row.get("status", "ok") != "ok" or row.get("failed"):
        return {}
    others = {name: r for name, r in finished.items() if name != row["name"]}
    scores = search_scores({**others, row["name"]: row})
    mine_all = scores.get(row["name"]) or {}
    taken = dict(row.get("repeats") or {})
    cost = {name: tuple(r.get("cost") or ()) for name, r in {**others, row["name"]: row}.items()}
    wanted: dict[str, int] = {}
    for _key, _meaning, metric in USE_CASES:
        mine = mine_all.get(metric)
        rivals = [(name, values[metric]) for name, values in scores.items()
                  if name != row["name"] and values and metric in values]  # fmt: skip
        left = max_repeats - int(taken.get(metric, 0))
        if mine is None or not rivals or left <= 0 or mine.mean <= 0:
            continue
        best_name, best = max(rivals, key=lambda nv: nv[1].mean)
        bar = _bar(cost[row["name"]], cost[best_name], best.mean, tolerance)
        leads = mine.mean > best.mean  # the best so far: every later point is judged against its mean
        if leads or undecided(mine, best, bar, relative_spread(scores, metric)):
            wanted[metric] = more_runs(mine.runs, left)
    return wanted
