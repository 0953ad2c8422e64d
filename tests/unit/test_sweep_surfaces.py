"""The search benchmark's surfaces (scripts/sweep_surfaces.py) have the shape they claim: each use case's speed peaks
inside or at the end of the budget axis (rises, then falls) per branch, about 8 % of points crash and a few are
refused, and every launch draws its own noise, so a benchmark on them cannot reuse one draw."""

from __future__ import annotations

import itertools
import statistics

from script_loader import load_script

surfaces = load_script("sweep_surfaces")


def _unimodal(values: list[float]) -> bool:
    peak = values.index(max(values))
    steps = list(itertools.pairwise(values))
    return all(a <= b for a, b in steps[:peak]) and all(a >= b for a, b in steps[peak:])


def test_each_branch_is_unimodal_in_the_budget_for_every_use_case_and_shape():
    for shape in surfaces.GRIDS:
        points = surfaces.grid_points(shape)
        for seed in range(20):
            surf = surfaces.surface(points, seed)
            lines: dict[tuple, list] = {}
            for p in points:
                lines.setdefault((p.branch(), p.topk), []).append(p)
            for line in lines.values():
                line.sort(key=lambda p: p.budget)
                for metric in surfaces.METRICS:
                    assert _unimodal([surf.truth[p.name][metric] for p in line]), (shape, seed, metric)


def test_the_grid_shapes_are_about_18_26_and_58_points_and_crashes_and_refusals_are_drawn():
    assert [len(surfaces.grid_points(s)) for s in surfaces.GRIDS] == [18, 26, 58]
    points = surfaces.grid_points("58")
    crashed = [len(surfaces.surface(points, seed).crashes) / len(points) for seed in range(200)]
    refused = [len(surfaces.surface(points, seed).rejected) for seed in range(200)]
    assert 0.06 < statistics.mean(crashed) < 0.10
    assert 0 < statistics.mean(refused) < 4


def test_two_launches_of_one_point_draw_independent_noise_of_the_stated_size():
    points = surfaces.grid_points("18")
    surf = surfaces.surface(points, 7, crash_rate=0.0)
    launch = surfaces.Launcher(surf, runs=400)
    first, second = launch(points[0]), launch(points[0])
    truth = surf.truth[points[0].name]["tok_s_cmax"]
    assert first["per_run"]["tok_s_cmax"] != second["per_run"]["tok_s_cmax"]
    spread = statistics.stdev(first["per_run"]["tok_s_cmax"]) / truth
    assert 0.025 < spread < 0.035


def test_a_points_kth_launch_reads_the_same_whatever_was_launched_before_it():
    """Common random numbers: two modes on one surface see the same runs of a point they both launch, so a comparison
    of them is not decided by which draws fell to which; another seed draws another set."""
    points = surfaces.grid_points("18")
    surf = surfaces.surface(points, 7, crash_rate=0.0)
    one, other = surfaces.Launcher(surf), surfaces.Launcher(surf)
    one(points[3])
    first = one(points[0])["per_run"]
    assert other(points[0])["per_run"] == first  # after another launch, or none
    assert other(points[0])["per_run"] != first  # its second launch draws anew
    assert one.repeat(points[0], {"tok_s_cmax": 2}) == other.repeat(points[0], {"tok_s_cmax": 2})
    assert surfaces.Launcher(surf, seed=1)(points[0])["per_run"] != first
