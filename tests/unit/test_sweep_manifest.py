"""The sweep's manifest (module_utils/specgate/sweep/manifest.py) and the rows it lets resume and the report read: a
row counts only for its point's settings under the sweep's conditions, whatever its file name or order; a re-run of
an id whose conditions or points' settings changed is refused naming what differs, or continues in a fresh id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.module_utils.specgate.sweep.grid import Drafter
from ansible.module_utils.specgate.sweep.manifest import MANIFEST_FILE, ManifestChanged, build, settle
from ansible.module_utils.specgate.sweep.resume import load_rows, plan, row_file
from ansible.module_utils.specgate.sweep.run import points_of, report
from sweep_fakes import synthetic_row

GRID = {"axes": {"block_size": [8], "budget": [4, 8], "topk": [4]}}
CONDITIONS = {
    "matrix": {"spec_gate_runs": 3, "spec_gate_bench_concurrency": [1, 4]},
    "engine": {"sglang_env_packages": ["sglang==0.5.23"], "sglang_env_patches": []},
    "target": {"model_weights_target_repo": "org/kimi", "model_weights_target_revision": "r1"},
}


def conditions(**changes: dict) -> dict:
    return {section: {**values, **changes.get(section, {})} for section, values in CONDITIONS.items()}


def first_run(parent: Path, grid: object = GRID, sweep_id: str = "fn") -> Path:
    """A sweep id measured once: its manifest and a finished row per point."""
    points = points_of(grid)
    manifest = build(points, CONDITIONS)
    settled = settle(parent, sweep_id, manifest, "refuse")
    settled.directory.mkdir(parents=True)
    (settled.directory / MANIFEST_FILE).write_text(json.dumps(settled.manifest))
    for point in points:
        row = {**synthetic_row(point), "conditions": manifest.conditions_digest}
        (settled.directory / row_file(point.name)).write_text(json.dumps(row))
    return settled.directory


def test_a_reordered_grid_is_the_same_sweep_and_every_row_still_counts(tmp_path):
    directory = first_run(tmp_path)
    reordered = {"axes": {"block_size": [8], "budget": [8, 4], "topk": [4]}}
    points = points_of(reordered)
    manifest = build(points, CONDITIONS)
    settled = settle(tmp_path, "fn", manifest, "refuse")
    assert (settled.sweep_id, settled.write) == ("fn", False)
    assert set(plan(points, load_rows(directory), manifest.conditions_digest).finished) == {p.name for p in points}


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"matrix": {"spec_gate_bench_concurrency": [1, 8]}},
         "the benchmark matrix: spec_gate_bench_concurrency [1, 4] -> [1, 8]"),
        ({"engine": {"sglang_env_packages": ["sglang==0.5.24"]}},
         'the engine: sglang_env_packages ["sglang==0.5.23"] -> ["sglang==0.5.24"]'),
        ({"target": {"model_weights_target_revision": "r2"}},
         'the target model: model_weights_target_revision "r1" -> "r2"'),
    ],
    ids=["matrix", "engine-pin", "target-revision"],
)
def test_other_conditions_are_refused_before_anything_naming_what_differs(tmp_path, changed, named):
    directory = first_run(tmp_path)
    before = {p.name: p.read_text() for p in directory.iterdir()}
    manifest = build(points_of(GRID), conditions(**changed))
    with pytest.raises(ManifestChanged) as error:
        settle(tmp_path, "fn", manifest, "refuse")
    assert named in str(error.value)
    assert "spec_sweep_on_change: new" in str(error.value)
    assert {p.name: p.read_text() for p in directory.iterdir()} == before


def test_a_point_kept_under_its_name_with_other_settings_is_refused_naming_the_point_and_setting(tmp_path):
    first_run(tmp_path, {"axes": {"block_size": [8], "budget": [4, 8], "topk": [4]},
                         "vars": {"sglang_service_mem_fraction_static": 0.8}})  # fmt: skip
    edited = {"axes": {"block_size": [8], "budget": [4, 8], "topk": [4]},
              "vars": {"sglang_service_mem_fraction_static": 0.7}}  # fmt: skip
    with pytest.raises(ManifestChanged, match=r"point bs8-b4-t4: vars: sglang_service_mem_fraction_static 0.8 -> 0.7"):
        settle(tmp_path, "fn", build(points_of(edited), CONDITIONS), "refuse")


def test_a_drafter_revision_is_part_of_the_point(tmp_path):
    catalog = {"d8": {"repo": "org/d8", "revision": "r1"}}
    grid = {"axes": {"algorithm": ["DFLASH"], "block_size": [8]}, "drafter": "d8"}
    points = points_of(grid, catalog=catalog)
    settled = settle(tmp_path, "fn", build(points, CONDITIONS), "refuse")
    settled.directory.mkdir(parents=True)
    (settled.directory / MANIFEST_FILE).write_text(json.dumps(settled.manifest))
    (settled.directory / row_file(points[0].name)).write_text(json.dumps({"name": points[0].name, "status": "ok"}))
    bumped = points_of(grid, catalog={"d8": {"repo": "org/d8", "revision": "r2"}})
    assert bumped[0].drafter == Drafter(repo="org/d8", revision="r2", name="d8")
    with pytest.raises(ManifestChanged, match=r'point dflash-bs8: drafter: revision "r1" -> "r2"'):
        settle(tmp_path, "fn", build(bumped, CONDITIONS), "refuse")


def test_new_measures_in_a_fresh_id_that_continues_the_old_one_and_a_rerun_resumes_it(tmp_path):
    first_run(tmp_path)
    changed = build(points_of(GRID), conditions(matrix={"spec_gate_runs": 5}))
    settled = settle(tmp_path, "fn", changed, "new")
    assert (settled.sweep_id, settled.continues) == ("fn.2", "fn")
    assert settled.manifest["continues"] == "fn"
    assert any("spec_gate_runs 3 -> 5" in d for d in settled.differences)
    settled.directory.mkdir()
    (settled.directory / MANIFEST_FILE).write_text(json.dumps(settled.manifest))
    (settled.directory / "bs8-b4-t4.json").write_text("{}")
    again = settle(tmp_path, "fn", changed, "new")
    assert (again.sweep_id, again.write) == ("fn.2", False), "the continuation is resumed, not a third id started"
    other = settle(tmp_path, "fn", build(points_of(GRID), conditions(matrix={"spec_gate_runs": 7})), "new")
    assert other.sweep_id == "fn.3"


def test_points_added_to_the_grid_are_not_a_change_and_keep_the_others_rows(tmp_path):
    directory = first_run(tmp_path)
    grown = {"axes": {"block_size": [8], "budget": [4, 8, 16], "topk": [4]}}
    points = points_of(grown)
    manifest = build(points, CONDITIONS)
    settled = settle(tmp_path, "fn", manifest, "refuse")
    assert settled.write
    assert set(settled.manifest["points"]) == {p.name for p in points}
    resumed = plan(points, load_rows(directory), manifest.conditions_digest)
    assert [p.name for p in resumed.todo] == ["bs8-b16-t4"]


def test_a_manifest_without_rows_is_replaced_not_refused(tmp_path):
    directory = first_run(tmp_path)
    for row in directory.glob("bs8-*.json"):
        row.unlink()
    settled = settle(tmp_path, "fn", build(points_of(GRID), conditions(matrix={"spec_gate_runs": 5})), "refuse")
    assert (settled.sweep_id, settled.write) == ("fn", True)


def test_rows_of_other_conditions_or_settings_are_never_read_by_resume_or_the_report(tmp_path):
    """The issue's cases: an old NN-<name>.json that sorts after the point's own row, a row measured with an older
    drafter under the point's name, and a row of other conditions: none is read, none wins a use case."""
    points = points_of(GRID)
    manifest = build(points, CONDITIONS)
    digest = manifest.conditions_digest
    fast = {**synthetic_row(points[0]), "conditions": digest}
    for metric in ("speed_c1_short", "speed_c16_short", "throughput_c64"):
        if metric in fast:
            fast[metric] *= 100
    (tmp_path / "09-bs8-b8-t4.json").write_text(json.dumps({**fast, "name": "bs8-b8-t4", "point": points[1].key()}))
    (tmp_path / row_file("bs8-b8-t4")).write_text(json.dumps(
        {**synthetic_row(points[1]), "conditions": digest, "point": {**points[1].key(), "drafter": {"repo": "old"}}}))
    (tmp_path / row_file("bs8-b4-t4")).write_text(json.dumps({**fast, "conditions": "another-digest"}))
    resumed = plan(points, load_rows(tmp_path), digest)
    assert resumed.finished == {}
    assert "other settings" in resumed.redo["bs8-b8-t4"]
    assert "other conditions" in resumed.redo["bs8-b4-t4"]
    written = report(tmp_path, "fn", "ct200", points, load_rows(tmp_path), conditions=digest)
    assert written["winners"] == {} or all(w.get("name") is None for w in written["winners"].values())
    assert written["launches"]["launched"] == 0
