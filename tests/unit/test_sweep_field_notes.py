"""The field notes' sweep on the sim's engine: both modes pick the field notes' winners, the search with fewer
launches than the grid (at most 0.85 of it, the goal on an 18-point grid; scripts/bench_sweep_search.py --surfaces
measures both on generated surfaces with independent noise, where a figure can be trusted)."""

from __future__ import annotations

import pytest
import yaml
from ansible.module_utils.specgate.sweep.grid import expand
from script_loader import ROOT
from sweep_fakes import bench_script

pytestmark = pytest.mark.slow

FIELD_NOTES_WINNERS = {"latency": "bs8-b8-t4", "long_context": "bs16-b32-t8", "throughput": "bs8-b4-t4"}


def test_both_modes_reproduce_the_field_notes_conclusions():
    script = bench_script()
    grid = yaml.safe_load((ROOT / "tests/fixtures/sweeps/field-notes-grid.yml").read_text())["spec_sweep_grid"]
    points = expand(grid)
    # A launch of a point on the sim is the same draw in both modes (seeded by the point's requests): measured once,
    # it serves the search's launch of that point too (their count is what the test compares, not their time).
    measured: dict[str, dict] = {}

    def launch(point):
        if point.name not in measured:
            measured[point.name] = script.sim_launch(point, 3)
        return dict(measured[point.name])

    results = {search: script.run_mode(points, launch, search=search, tolerance=0.01) for search in (False, True)}
    for result in results.values():
        assert script.winner_names(result) == FIELD_NOTES_WINNERS, result.mode
    assert len(results[True].launches) <= 0.85 * len(results[False].launches)
