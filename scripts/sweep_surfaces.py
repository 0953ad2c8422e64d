"""A seeded family of sweep surfaces of the shape the search assumes, measured with independent noise: the data the
search is judged on (scripts/bench_sweep_search.py), never the data it was tuned on.

Each surface draws its own parameters. Per branch (algorithm, block size, window, drafter), acceptance rises with the
DDTree budget and saturates (1 + A (1 - exp(-budget / tau))), top-k adds or costs a little depending on the budget;
the verify step's cost grows with the budget, more steeply at high concurrency, so each use case's speed is unimodal
in the budget with its peak where the surface puts it. Block size and window shift whole branches (a window helps
long contexts and costs short ones a little). About 8 % of points crash on start, a few are refused before launch.
A launch measures a point's three use-case metrics per run with independent noise (default 3 % per run), so two
launches of one point, or two points of identical truth, never read the same. The noise is drawn per point and launch
(its k-th launch, its k-th round of repeats), not in launch order: every mode measured on one surface with one seed
sees the same runs of a point it launches (common random numbers), so two modes compared on a surface differ by what
they launched and picked, not by which draws fell to them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible.module_utils.specgate.sweep.grid import Point, expand
from ansible.module_utils.specgate.sweep.sweep_report import USE_CASES

METRICS = tuple(metric for _key, _meaning, metric in USE_CASES)

# Three grid shapes of about 18, 26 and 58 points (the field notes' grid is the first).
GRIDS: dict[str, object] = {
    "18": [
        {"name": "bs8", "axes": {"algorithm": ["DDTREE"], "block_size": [8], "budget": [4, 8, 12, 16], "topk": [4, 6],
                                 "window": [2048, None]}},
        {"name": "bs16", "axes": {"algorithm": ["DDTREE"], "block_size": [16], "budget": [16, 32], "topk": [4, 8]},
         "constraints": ["topk * 4 == budget"]},
    ],
    "26": [
        {"name": "bs8", "axes": {"algorithm": ["DDTREE"], "block_size": [8], "budget": [4, 8, 12, 16, 24, 32],
                                 "topk": [4, 8], "window": [2048, None]}},
        {"name": "bs16", "axes": {"algorithm": ["DDTREE"], "block_size": [16], "budget": [16, 32], "topk": [4]}},
    ],
    "58": [
        {"name": "bs8", "axes": {"algorithm": ["DDTREE"], "block_size": [8], "budget": [4, 6, 8, 12, 16, 24, 32],
                                 "topk": [2, 4, 8], "window": [2048, None]}},
        {"name": "bs16", "axes": {"algorithm": ["DDTREE"], "block_size": [16],
                                  "budget": [8, 16, 24, 32, 48, 64, 96, 128], "topk": [4, 8]}},
    ],
}  # fmt: skip


def grid_points(shape: str) -> list[Point]:
    return expand(GRIDS[shape])


@dataclass(frozen=True)
class Surface:
    seed: int
    truth: Mapping[str, Mapping[str, float]]  # point name -> metric -> true value
    crashes: frozenset[str]
    rejected: frozenset[str]
    noise: float

    def best(self, metric: str, launchable: Sequence[str]) -> float:
        return max(self.truth[name][metric] for name in launchable if name not in self.crashes)


def _branch_key(point: Point) -> tuple:
    return (point.algorithm, point.block_size, point.window, point.parallel)


def surface(points: Sequence[Point], seed: int, *, noise: float = 0.03, crash_rate: float = 0.08,
            reject_rate: float = 0.03) -> Surface:  # fmt: skip
    """One surface of the family over ``points``: its true metrics, the points that crash and those refused."""
    rng = random.Random(seed)
    # Per use case: how steeply verify cost grows with the budget (latency: cheap; throughput at high concurrency:
    # steep), and the exponent of that growth.
    steep = {"speed_c1_short": rng.uniform(0.01, 0.05), "accept_long": 0.0, "tok_s_cmax": rng.uniform(0.08, 0.3)}
    power = rng.uniform(1.0, 1.6)
    tau = rng.uniform(5.0, 16.0)
    branches: dict[tuple, dict[str, float]] = {}
    for point in points:
        key = _branch_key(point)
        if key not in branches:
            branches[key] = {
                "gain": rng.uniform(2.2, 4.0) * (1.0 + (point.block_size - 8) / 8 * rng.uniform(-0.12, 0.12)),
                "tau": tau * rng.uniform(0.7, 1.4) * (point.block_size / 8) ** 0.5,
                "short": rng.uniform(-0.05, 0.01) if point.window else 0.0,  # a window costs short contexts a little
                "long": rng.uniform(-0.02, 0.1) if point.window else 0.0,  # and helps long ones, or not
                "topk": rng.uniform(-0.04, 0.06),  # per doubling of top-k, at budget 16
                "topk_budget": rng.uniform(-0.5, 0.5),  # how that depends on the budget
            }
    truth: dict[str, dict[str, float]] = {}
    for point in points:
        b = branches[_branch_key(point)]
        budget = point.budget or point.block_size - 1
        topk_doublings = math.log2((point.topk or 4) / 4)
        topk_factor = 1.0 + b["topk"] * topk_doublings * (1.0 + b["topk_budget"] * math.log2(budget / 16))
        accept = 1.0 + b["gain"] * (1.0 - math.exp(-budget / b["tau"])) * max(topk_factor, 0.5)
        values = {}
        for metric in METRICS:
            cost = 1.0 + steep[metric] * (budget / 4) ** power * (1.0 + 0.1 * math.log2(point.topk or 4))
            shift = 1.0 + (b["long"] if metric == "accept_long" else b["short"])
            values[metric] = accept / cost * shift * (100.0 if metric != "accept_long" else 1.0)
        truth[point.name] = values
    names = [p.name for p in points]
    crashes = frozenset(n for n in names if rng.random() < crash_rate)
    rejected = frozenset(n for n in names if n not in crashes and rng.random() < reject_rate)
    return Surface(seed, truth, crashes, rejected, noise)


class Launcher:
    """Launches points of one surface: every run of every launch has its own noise draw, the same for a point's k-th
    launch (and its k-th round of repeats) whichever mode launches it (``seed`` draws another set)."""

    def __init__(self, surf: Surface, runs: int = 3, *, seed: int = 0) -> None:
        self.surface = surf
        self.runs = runs
        self.seed = seed
        self.count = 0
        self.runs_taken = 0  # runs of a use case's cells, per metric: a launch's runs, plus its repeats
        self._draws: dict[tuple[str, str], int] = {}  # (point, launch or repeat) -> how many so far

    def _noisy(self, point: Point, kind: str, wanted: Mapping[str, int]) -> dict[str, list[float]]:
        key = (point.name, kind)
        self._draws[key] = self._draws.get(key, 0) + 1
        rng = random.Random(f"{self.surface.seed}-{self.seed}-{point.name}-{kind}-{self._draws[key]}")
        truth = self.surface.truth[point.name]
        return {m: [truth[m] * (1.0 + rng.gauss(0.0, self.surface.noise)) for _ in range(n)]
                for m, n in wanted.items()}  # fmt: skip

    def measure(self, point: Point, runs: int) -> dict[str, list[float]]:
        return self._noisy(point, "launch", dict.fromkeys(METRICS, runs))

    def repeat(self, point: Point, wanted: Mapping[str, int]) -> dict[str, list[float]]:
        """More runs of some use cases' cells while the point serves (no new launch): each with its own noise."""
        self.runs_taken += max(wanted.values(), default=0)
        return self._noisy(point, "repeat", wanted)

    def __call__(self, point: Point) -> dict:
        self.count += 1
        if point.name in self.surface.crashes:
            raise RuntimeError(f"{point.name} did not become ready (crashed on start)")
        per_run = self.measure(point, self.runs)
        self.runs_taken += self.runs
        return {"name": point.name, "release": f"r-{point.name}", "failed": False, "status": "ok",
                "bench_complete": True, "point": point.key(), "cost": list(point.cost()), "per_run": per_run,
                "shape": {"shortest_context": 512, "longest_context": 32768, "concurrency": [1, 64]},
                **{m: sum(v) / len(v) for m, v in per_run.items()}}  # fmt: skip


def shortfall(surf: Surface, metric: str, picked: str | None, launchable: Sequence[str]) -> float:
    """How far below the true best of ``launchable`` the picked point truly is (1.0: nothing picked)."""
    if picked is None:
        return 1.0
    return 1.0 - surf.truth[picked][metric] / surf.best(metric, launchable)
