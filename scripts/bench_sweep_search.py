#!/usr/bin/env python3
"""Exhaustive grid vs the opt-in search on the sim: launches, sim wall time, and whether the winners are the same.

Runs the field notes' grid (tests/fixtures/sweeps/field-notes-grid.yml: block 8 over budget 4/8/12/16 x
top-k 4/6 x window 2048/none; block 16 over budgets 16/32) both ways. A "launch" is one point's benchmark,
measured by the sim's own engine (specgate_sim.sweepbench: the Engine the simulated server runs, sampled
acceptance, no HTTP); the sweep logic is module_utils/specgate/sweep/ as the playbook runs it: each step asks
resume.next_to_launch what to launch from the rows so far, exactly as a resumed sweep does.

    scripts/bench_sweep_search.py [--runs 3] [--tolerance 0.01] [--seed 0] [--json OUT] [--report DIR] [--quiet]

Exit status 0 when the search's per-use-case winners equal the exhaustive grid's with at most 0.85 of its launches
(the goal on an 18-point grid).

    scripts/bench_sweep_search.py --surfaces 200 [--noise 0.03] [--runs 3] [--first-seed 1000] [--max-repeats 9]
                                  [--json OUT]

measures both modes instead on a seeded family of generated surfaces (scripts/sweep_surfaces.py: the shape the search
assumes, independent noise per point and run, crashes and refusals) over three grid shapes of 18, 26 and 58 points,
each with and without repeats while launched ("+repeats": spec_sweep_max_repeats), and prints per shape the share of
(surface, use case) pairs whose pick is within 1 % of the true best, the median and worst launch ratio, the mean and
worst shortfall, the runs per launch, and the same rows judged by the plain max of means: the figures a winner can be
trusted by, on data nothing was tuned to.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# The project's collection: its paths module puts module_utils on ansible.module_utils' path.
sys.path.insert(0, str(ROOT / "local_collections"))
sys.path.insert(0, str(ROOT / "sim"))
sys.path.insert(0, str(ROOT / "scripts"))

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path
import sweep_search_v2  # noqa: E402 - the frozen v2 search and pick, the reference the search is measured against
from ansible.module_utils.specgate.sweep.grid import Point, expand  # noqa: E402 - needs the path set above
from ansible.module_utils.specgate.sweep.plots import write_plots  # noqa: E402
from ansible.module_utils.specgate.sweep.progress import progress_line  # noqa: E402
from ansible.module_utils.specgate.sweep.repeats import DEFAULT_MAX_REPEATS  # noqa: E402
from ansible.module_utils.specgate.sweep.resume import next_to_launch  # noqa: E402
from ansible.module_utils.specgate.sweep.run import repeat_plan  # noqa: E402
from ansible.module_utils.specgate.sweep.sweep_report import (  # noqa: E402
    current_rows,
    failed_row,
    rejected_row,
    robust_winners,
    summarize,
    sweep_document,
    sweep_report_markdown,
    with_repeats,
)
from specgate_sim.specmodel import SpecConfig  # noqa: E402
from specgate_sim.sweepbench import bench_result  # noqa: E402
from sweep_surfaces import GRIDS, METRICS, Launcher, grid_points, shortfall, surface  # noqa: E402

GRID = ROOT / "tests" / "fixtures" / "sweeps" / "field-notes-grid.yml"
TRAINED_BLOCK_SIZE = 8  # the field notes' drafter (kimi-k26-dflash-b8): bs16 drafts past its training
# The field notes' benchmark matrix, cut to its corners: short and long context, C=1 and high concurrency.
SETS = ("code", "math", "chat")
CONTEXTS = (512, 32768)
CONCURRENCY = (1, 64)


# More runs of a serving point's use cases (metric -> runs wanted), measured: metric -> values.
Repeat = Callable[[Point, Mapping[str, int]], Mapping[str, list[float]]]


@dataclass
class ModeResult:
    mode: str
    launches: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    rows: list[dict] = field(default_factory=list)
    winners: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    pruned: dict = field(default_factory=dict)


def sim_launch(point: Point, runs: int, seed: int = 0) -> dict:
    """One launch on the sim: the point's benchmark, as the sweep keeps it (row + cost + settings)."""
    cfg = SpecConfig(point.algorithm, point.block_size, TRAINED_BLOCK_SIZE, point.budget or point.block_size - 1,
                     point.topk or 1, window=point.window)  # fmt: skip
    bench = bench_result(cfg, sets=SETS, contexts=CONTEXTS, concurrency=CONCURRENCY, runs=runs, seed=seed)
    row = summarize(point.name, f"sim-{point.name}", bench)
    row.update(status="ok", point=point.key(), cost=list(point.cost()), vars=point.service_vars(),
               trained_block_size=TRAINED_BLOCK_SIZE)  # fmt: skip
    return row


def run_mode(points: Sequence[Point], launch: Callable[[Point], dict], *, search: bool, tolerance: float,
             rows: Sequence[Mapping] = (), resolve: Callable[[Point], str | None] | None = None,
             say: Callable[[str], None] | None = None, max_repeats: int = 0,
             repeat: Repeat | None = None) -> ModeResult:  # fmt: skip
    """The sweep's loop as the playbook runs it: every point resolved first (a rejected one recorded, never launched),
    then one launch at a time, each chosen from the rows so far; a launch that fails is recorded and the loop goes on.
    ``resolve`` answers SGLang's rejection message or None; ``say`` gets the progress line as each point starts.
    With ``max_repeats`` and ``repeat`` (point, metric -> runs wanted: metric -> values), each launched point takes
    its repeats while it serves, round by round as the playbook asks (run.repeat_plan)."""
    result = ModeResult("search" if search else "exhaustive", rows=[dict(r) for r in rows])
    started = time.monotonic()
    if resolve is not None:
        done = {r["name"] for r in result.rows}
        for point in points:
            message = None if point.name in done else resolve(point)
            if message is not None:
                result.rows.append(rejected_row(point.name, point.key(), message))
    durations: list[float] = []
    while True:
        step = next_to_launch(points, result.rows, search=search, tolerance=tolerance)
        if step.point is None:
            if step.proposal is not None:
                result.notes = list(step.proposal.notes)
                result.pruned = dict(step.proposal.pruned)
            break
        if say is not None:
            say(progress_line(len(result.launches) + 1, len(points), step.point.name, time.monotonic() - started,
                              durations, search=search))  # fmt: skip
        result.launches.append(step.point.name)
        began = time.monotonic()
        try:
            row = launch(step.point)
        except Exception as error:  # any failure to start or benchmark is that point's row
            row = failed_row(step.point.name, None, f"{type(error).__name__}: {error}", step.point.key())
        while repeat is not None and max_repeats > 0:
            wanted = repeat_plan(points, result.rows, row, max_repeats=max_repeats, tolerance=tolerance)["wanted"]
            if not wanted:
                break
            row = with_repeats(row, repeat(step.point, wanted))
        durations.append(time.monotonic() - began)
        result.rows.append(row)
    result.wall_s = time.monotonic() - started
    result.rows = [dict(r) for r in current_rows(result.rows)]
    result.winners = robust_winners(result.rows, tolerance)
    return result


def write_report(directory: Path, result: ModeResult, points: int) -> list[Path]:
    """What the sweep leaves on the controller: sweep.md embedding the plots, sweep.json, the PNGs."""
    plots = write_plots(result.rows, directory)
    launches = {"mode": result.mode, "launched": len(result.launches), "points": points, "pruned": result.pruned,
                "notes": result.notes}  # fmt: skip
    paths = [str(p) for p in plots]
    (directory / "sweep.md").write_text(
        sweep_report_markdown("field-notes", "sim", result.rows, result.winners, plots=paths, launches=launches))
    doc = sweep_document("field-notes", "sim", result.rows, result.winners, plots=paths, launches=launches)
    (directory / "sweep.json").write_text(json.dumps(doc, indent=1) + "\n")
    return [directory / "sweep.md", directory / "sweep.json", *plots]


def winner_names(result: ModeResult) -> dict[str, str | None]:
    return {key: w["name"] for key, w in result.winners.items()}


@dataclass
class FamilyRun:
    launches: int
    launchable: int
    runs: int  # benchmark runs of a use case's cells taken in all (a launch's runs, plus its repeats)
    shortfalls: dict[str, float]  # metric -> how far below the true best the pick truly is
    max_of_means: dict[str, float] = field(default_factory=dict)  # the same rows judged by the plain max of means


# Each mode as the sweep runs it, by the sweep's own pick; "+repeats": with repeats while launched
# (spec_sweep_max_repeats); v2's search and the whole grid judged by v2's pick are the references.
FAMILY_MODES = ("exhaustive", "exhaustive+repeats", "exhaustive-v2pick", "v2 search", "search", "search+repeats")


def _v2_search(points: Sequence[Point], launch: Callable[[Point], dict], rejected: set[str],
               tolerance: float) -> list[dict]:  # fmt: skip
    """v2's loop as it shipped: its own scores (median - 1.4826 MAD) and propose, rejected points never launched."""
    rows = {n: {"name": n, "status": "rejected"} for n in rejected}
    while True:
        proposal = sweep_search_v2.propose(points, sweep_search_v2.v2_scores(rows, METRICS), tolerance)
        if not proposal.points:
            return [r for r in rows.values() if r.get("status") != "rejected"]
        point = proposal.points[0]
        try:
            rows[point.name] = launch(point)
        except RuntimeError as error:
            rows[point.name] = failed_row(point.name, None, str(error), point.key())


def _max_of_means(rows: Sequence[Mapping], metric: str) -> str | None:
    ran = [r for r in rows if r.get("status") == "ok" and (r.get("per_run") or {}).get(metric)]
    return max(ran, key=lambda r: sum(r["per_run"][metric]) / len(r["per_run"][metric]))["name"] if ran else None


def family_run(points: Sequence[Point], surf, mode: str, *, tolerance: float, runs: int,
               max_repeats: int = 0) -> FamilyRun:  # fmt: skip
    """One mode on one surface (sweep_surfaces.py), each launch under its own noise: exhaustive and search as the
    sweep runs them (picks by robust_winners), with repeats while launched in the "+repeats" modes; v2's search and
    pick as they shipped (the frozen sweep_search_v2.py), and the exhaustive grid judged by v2's pick: the
    references they are measured against."""
    launcher = Launcher(surf, runs)  # one seed for every mode: a point's runs read the same whichever mode launched it
    launchable = [p.name for p in points if p.name not in surf.rejected]
    means: dict[str, float] = {}
    if mode == "v2 search":
        ok = {r["name"]: r for r in _v2_search(points, launcher, set(surf.rejected), tolerance)}
        picks = {m: sweep_search_v2.v2_pick(ok, m, tolerance) for m in METRICS}
    else:
        def resolve(point: Point) -> str | None:
            return "refused before launch" if point.name in surf.rejected else None

        repeats = max_repeats if mode.endswith("+repeats") else 0
        result = run_mode(points, launcher, search=mode.startswith("search"), tolerance=tolerance, resolve=resolve,
                          max_repeats=repeats, repeat=launcher.repeat)  # fmt: skip
        if mode == "exhaustive-v2pick":
            ok = {r["name"]: r for r in result.rows if r.get("status") == "ok"}
            picks = {m: sweep_search_v2.v2_pick(ok, m, tolerance) for m in METRICS}
        else:
            picks = {w["metric"]: w["name"] for w in result.winners.values()}
            means = {m: shortfall(surf, m, _max_of_means(result.rows, m), launchable) for m in METRICS}
    return FamilyRun(launcher.count, len(launchable), launcher.runs_taken,
                     {m: shortfall(surf, m, picks.get(m), launchable) for m in METRICS}, means)  # fmt: skip


def _summary(points: int, mode_runs: Sequence[FamilyRun], falls_of: Callable[[FamilyRun], Mapping[str, float]]) -> dict:
    falls = [f for r in mode_runs for f in falls_of(r).values()]
    ratios = sorted(r.launches / r.launchable for r in mode_runs)
    per_launch = sorted(r.runs / max(r.launches, 1) for r in mode_runs)
    return {"points": points, "within_1pct": sum(f <= 0.01 for f in falls) / len(falls),
            "median_launch_ratio": ratios[len(ratios) // 2], "worst_launch_ratio": ratios[-1],
            "worst_shortfall": max(falls), "mean_shortfall": sum(falls) / len(falls),
            "runs_per_launch": per_launch[len(per_launch) // 2]}  # fmt: skip


def family(surfaces: int, *, tolerance: float, runs: int, noise: float, first_seed: int = 1000,
           max_repeats: int = 6) -> dict:  # fmt: skip
    """Every mode on ``surfaces`` seeded surfaces per grid shape: per shape and mode, the share of (surface, use case)
    pairs whose pick is within 1 % of the true best, the median and worst launch ratio, the worst and mean shortfall,
    the median runs per launch; for the sweep's own modes also the same rows judged by the plain max of means."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for shape in GRIDS:
        points = grid_points(shape)
        done: dict[str, list[FamilyRun]] = {mode: [] for mode in FAMILY_MODES}
        for index in range(surfaces):
            surf = surface(points, first_seed + index, noise=noise)
            for mode in FAMILY_MODES:
                done[mode].append(family_run(points, surf, mode, tolerance=tolerance, runs=runs,
                                             max_repeats=max_repeats))  # fmt: skip
        out[shape] = {}
        for mode, mode_runs in done.items():
            out[shape][mode] = _summary(len(points), mode_runs, lambda r: r.shortfalls)
            if all(r.max_of_means for r in mode_runs):
                out[shape][f"{mode} (max of means)"] = _summary(len(points), mode_runs, lambda r: r.max_of_means)
    return out


def print_family(results: dict) -> None:
    print(f"{'grid':>5} {'mode':>37} {'within 1 %':>10} {'launches median':>16} {'worst':>6} "
          f"{'shortfall mean':>15} {'worst':>6} {'runs/launch':>11}")  # fmt: skip
    for modes in results.values():
        for mode, m in modes.items():
            print(f"{m['points']:>5} {mode:>37} {m['within_1pct']:>10.2f} {m['median_launch_ratio']:>15.2f}x "
                  f"{m['worst_launch_ratio']:>5.2f}x {m['mean_shortfall']:>15.2%} {m['worst_shortfall']:>6.1%} "
                  f"{m['runs_per_launch']:>11.1f}")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="benchmark runs per point (a mean's interval needs 2+)")
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0, help="the sim's request seed (another draw of the noise)")
    parser.add_argument("--json", type=Path, help="write both modes' launches, times and winners here")
    parser.add_argument("--report", type=Path, help="write each mode's sweep.md, sweep.json and plots under DIR/<mode>")
    parser.add_argument("--quiet", action="store_true", help="leave out the progress line printed per point")
    parser.add_argument("--surfaces", type=int, default=0,
                        help="instead: both modes on this many seeded surfaces per grid shape (sweep_surfaces.py)")
    parser.add_argument("--noise", type=float, default=0.03, help="with --surfaces: each run's noise (fraction)")
    parser.add_argument("--first-seed", type=int, default=1000,
                        help="with --surfaces: the first surface's seed (another family: one nothing was tuned on)")
    parser.add_argument("--max-repeats", type=int, default=DEFAULT_MAX_REPEATS,
                        help="with --surfaces: the +repeats modes' spec_sweep_max_repeats")
    args = parser.parse_args(argv)
    if args.surfaces:
        results = family(args.surfaces, tolerance=args.tolerance, runs=args.runs, noise=args.noise,
                         first_seed=args.first_seed, max_repeats=args.max_repeats)
        print_family(results)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
        return 0
    points = expand(yaml.safe_load(GRID.read_text())["spec_sweep_grid"])
    say = None if args.quiet else print
    results = [run_mode(points, lambda p: sim_launch(p, args.runs, args.seed), search=s, tolerance=args.tolerance,
                        say=say)
               for s in (False, True)]  # fmt: skip
    if args.report:
        for r in results:
            write_report(args.report / r.mode, r, len(points))
    exhaustive, search = results
    for r in results:
        print(f"{r.mode:>10}: {len(r.launches):2d} launches, sim wall time {r.wall_s:.1f} s")
        for key, w in r.winners.items():
            print(f"{'':12}{key}: {w['name']} ({w['metric']} {w['value']:.2f})")
            for note in w["notes"]:
                print(f"{'':14}- {note}")
    print(f"search launched: {', '.join(search.launches)}")
    for name, why in search.pruned.items():
        print(f"not launched: {name}: {why}")
    for note in search.notes:
        print(note)
    same = winner_names(exhaustive) == winner_names(search)
    ratio = len(search.launches) / len(exhaustive.launches)
    print(f"winners identical: {'yes' if same else 'NO'}; launches {len(search.launches)}/{len(exhaustive.launches)} "
          f"= {ratio:.2f}x (goal <= 0.85x)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([{"mode": r.mode, "launches": r.launches, "wall_s": r.wall_s,
                                          "winners": r.winners, "notes": r.notes, "pruned": r.pruned}
                                         for r in results], indent=1))  # fmt: skip
    return 0 if same and ratio <= 0.85 else 1


if __name__ == "__main__":
    sys.exit(main())
