"""The field notes' sweep on the sim's engine: both modes pick the field notes' winners, the search with at most
half the launches (scripts/bench_sweep_search.py, fewer runs per point to keep the test short)."""

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
    results = {search: script.run_mode(points, lambda p: script.sim_launch(p, 3), search=search, tolerance=0.01)
               for search in (False, True)}  # fmt: skip
    for result in results.values():
        assert script.winner_names(result) == FIELD_NOTES_WINNERS, result.mode
    assert len(results[True].launches) <= 0.5 * len(results[False].launches)
