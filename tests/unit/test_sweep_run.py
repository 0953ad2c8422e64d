"""The sweep's loop one question at a time (module_utils/specgate/sweep/run.py, behind library/spec_sweep_state):
which point next from the rows on disk, the progress line, what was skipped or failed, the report files."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.sweep.grid import Drafter
from ansible.module_utils.specgate.sweep.resume import load_rows, row_file
from ansible.module_utils.specgate.sweep.run import (
    ConfigPoint,
    SweepInputError,
    describe,
    drafter_of,
    next_step,
    points_of,
    report,
    started_row,
    sweep_drafters,
)
from ansible.module_utils.specgate.sweep.sweep_report import failed_row, rejected_row
from sweep_fakes import bench_script, synthetic_row

GRID = {"axes": {"block_size": [8], "budget": [4, 8, 12, 16], "topk": [4, 6], "window": [2048, None]}}


def write(directory, points, row):
    point = next(p for p in points if p.name == row["name"])
    (directory / row_file(point.name)).write_text(json.dumps(row))


def drive(directory, points, *, search, launch=synthetic_row, stop_after=None):
    """The playbook's loop: ask, mark started, launch, write the row; the names launched, in order."""
    launched = []
    for _ in points:
        step = next_step(points, load_rows(directory), search=search)
        if step.point is None or (stop_after is not None and len(launched) == stop_after):
            break
        write(directory, points, started_row(step.point))
        launched.append(step.point.name)
        write(directory, points, {**launch(step.point), "launch_s": 60.0})
    return launched


def test_exactly_one_of_configs_and_grid_is_refused_naming_both():
    for grid, configs, said in ((GRID, [{"name": "a", "vars": {}}], "both are set"), (None, [], "neither is set")):
        with pytest.raises(SweepInputError, match=r"spec_sweep_configs .* spec_sweep_grid") as error:
            points_of(grid, configs)
        assert said in str(error.value)


def test_a_grid_error_names_the_grid_entry():
    with pytest.raises(SweepInputError, match=r"spec_sweep_grid\[0\]\.axes\.budgets: unknown axis"):
        points_of({"axes": {"block_size": [8], "budgets": [4]}})


CATALOG = {"dflash-b8": {"repo": "org/d8", "revision": "r8"}, "dflash-b16": {"repo": "org/d16", "revision": "r16"},
           "staged": {"local_path": "/srv/d32"}}


def test_points_name_their_own_drafters_and_the_sweep_lists_each_download_once_besides_the_weights_stages():
    """Issue 17: a point's drafter (a catalog name, or repo + revision) is resolved to its source; the drafters the
    weights stage must fetch for the sweep are every one the points need, once each, less its own."""
    grid = [{"axes": {"algorithm": ["DFLASH"], "block_size": [8, 16],
                      "drafter": ["dflash-b8", "dflash-b16", {"repo": "org/d16", "revision": "r16"}]},
             "constraints": ["block_size == 8 or drafter != 'dflash-b8'"]},
            {"axes": {"algorithm": ["DFLASH"], "block_size": [32]}, "drafter": "staged"},
            {"axes": {"algorithm": ["DFLASH"], "block_size": [4]}}]  # fmt: skip
    weights = drafter_of({"name": "dflash-b8", "repo": "org/d8", "revision": "r8", "local_path": ""})
    points = points_of(grid, weights_drafter=weights, catalog=CATALOG)
    by_name = {p.name: p for p in points}
    # a repo given inline takes the name of the catalog entry of the same source (the report's snippet names it)
    assert by_name["dflash-bs16-d16"].drafter == Drafter("org/d16", "r16", name="dflash-b16")
    assert by_name["dflash-bs32"].drafter == Drafter(local_path="/srv/d32", name="staged")
    assert by_name["dflash-bs4"].drafter is None
    assert sweep_drafters(points, weights) == [
        {"key": "dflash-b16", "name": "dflash-b16", "repo": "org/d16", "revision": "r16", "local_path": None},
        {"key": "staged", "name": "staged", "repo": None, "revision": None, "local_path": "/srv/d32"}]
    # the weights stage's own drafter serves its points (null key); the others are found by key
    assert describe(by_name["dflash-bs8-dflash-b8"], weights)["drafter"]["key"] is None
    assert describe(by_name["dflash-bs16-dflash-b16"], weights)["drafter"]["key"] == "dflash-b16"
    assert describe(by_name["dflash-bs4"], weights)["drafter"] is None


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"axes": {"block_size": [8]}, "drafter": "dflash-b32"},
         r"drafter dflash-b32 is not an entry of model_weights_drafters \(dflash-b16, dflash-b8, staged\)\. Fix: add"),
        ({"axes": {"block_size": [8]}, "drafter": {"repo": "org/other"}}, r"drafter org/other has no revision; pin it"),
        ({"axes": {"block_size": [8]}, "drafter": {"repo": "org/d8", "revision": "other"}},
         r"org/d8@other, the weights stage's drafter \(model_weights_drafter\) the same repo at r8: both would"),
        ({"axes": {"block_size": [8]}, "drafter": {"name": "dflash-b16", "repo": "org/x", "revision": "1"}},
         r"model_weights_drafters\[dflash-b16\] is"),
    ],
)
def test_a_drafter_the_sweep_cannot_fetch_is_refused_naming_the_variable_and_the_fix(grid, message):
    with pytest.raises(SweepInputError, match=message):
        points_of(grid, weights_drafter=Drafter("org/d8", "r8"), catalog=CATALOG)


def test_a_drafter_repo_without_a_revision_takes_the_weights_stages_and_a_bad_catalog_entry_is_refused():
    points = points_of({"axes": {"block_size": [8]}, "drafter": {"repo": "org/d8"}},
                       weights_drafter=Drafter("org/d8", "r8"))  # fmt: skip
    assert points[0].drafter == Drafter("org/d8", "r8")
    assert sweep_drafters(points, Drafter("org/d8", "r8")) == []
    with pytest.raises(SweepInputError, match=r"model_weights_drafters\[b8\] \(named by spec_sweep_grid, point "):
        points_of({"axes": {"block_size": [8]}, "drafter": "b8"}, catalog={"b8": {"repo": "org/d8"}})
    assert drafter_of({"repo": "", "revision": ""}) is None


def test_a_v1_config_names_its_drafter_and_none_means_the_weights_stages():
    points = points_of(None, [{"name": "a", "vars": {}, "drafter": "dflash-b16"}, {"name": "b", "vars": {},
                                                                                 "drafter": "none"}],
                       catalog=CATALOG)  # fmt: skip
    assert points[0].drafter == Drafter("org/d16", "r16", name="dflash-b16")
    assert points[0].key()["drafter"]["repo"] == "org/d16"
    assert points[1].drafter is None
    assert "drafter" not in points[1].key()
    with pytest.raises(SweepInputError, match=r"spec_sweep_configs\[0\] \(a\): drafter nope is not an entry"):
        points_of(None, [{"name": "a", "vars": {}, "drafter": "nope"}], catalog=CATALOG)


def test_v1_configs_are_points_with_their_vars_and_bad_names_are_refused():
    points = points_of(None, [{"name": "a", "vars": {"sglang_service_block_size": 8}}, {"name": "b", "vars": {}}])
    assert [p.name for p in points] == ["a", "b"]
    key = {"vars": {"sglang_service_block_size": 8}}
    assert describe(points[0], conditions="c0ffee") == {
        "name": "a", "file": "a.json", "vars": {"sglang_service_block_size": 8}, "key": key,
        "row": {"point": key, "conditions": "c0ffee"}, "cost": [], "drafter": None}  # fmt: skip
    with pytest.raises(SweepInputError, match=r"spec_sweep_configs\[0\]: name 'a b'"):
        points_of(None, [{"name": "a b", "vars": {}}])
    with pytest.raises(SweepInputError, match="names repeat"):
        points_of(None, [{"name": "a", "vars": {}}, {"name": "a", "vars": {}}])


def test_search_needs_a_grid_and_the_tolerance_is_a_fraction():
    configs = [ConfigPoint("a", ())]
    with pytest.raises(SweepInputError, match="spec_sweep_search needs spec_sweep_grid"):
        next_step(configs, [], search=True)
    with pytest.raises(SweepInputError, match="spec_sweep_tolerance"):
        next_step(points_of(GRID), [], tolerance=1.5)


def test_the_exhaustive_loop_launches_every_point_once_in_order(tmp_path):
    points = points_of(GRID)
    assert drive(tmp_path, points, search=False) == [p.name for p in points]
    assert next_step(points, load_rows(tmp_path)).point is None


def test_the_search_loop_launches_what_the_benchmarked_search_launches_fewer_than_the_grid(tmp_path):
    points = points_of(GRID)
    launched = drive(tmp_path, points, search=True)
    assert launched == bench_script().run_mode(points, synthetic_row, search=True, tolerance=0.01).launches
    assert 0 < len(launched) < len(points)
    done = next_step(points, load_rows(tmp_path), search=True)
    assert done.point is None
    assert done.progress is None


def test_a_rerun_skips_finished_points_and_redoes_one_interrupted_mid_bench(tmp_path):
    points = points_of(GRID)
    first = drive(tmp_path, points, search=False, stop_after=3)
    write(tmp_path, points, started_row(points[3]))  # killed mid-bench of the fourth point
    step = next_step(points, load_rows(tmp_path))
    assert step.point == points[3]
    assert "interrupted" in step.redo[points[3].name]
    assert set(step.finished) == set(first)
    assert drive(tmp_path, points, search=False) == [p.name for p in points[3:]]


def test_rejected_and_crashed_points_are_finished_answers_never_launched_again(tmp_path):
    points = points_of(GRID)
    write(tmp_path, points, rejected_row(points[0].name, points[0].key(), "DDTREE needs the ddtree feature"))
    write(tmp_path, points, failed_row(points[1].name, None, "did not become ready", points[1].key()))
    step = next_step(points, load_rows(tmp_path))
    assert step.point == points[2]
    assert step.skipped == ({"name": points[0].name, "reason": "SGLang rejected it: DDTREE needs the ddtree feature"},)
    assert step.failed == ({"name": points[1].name, "reason": "did not become ready"},)
    # N counts the launchable points (the rejected one is never launched); the crash was one of them
    assert (step.index, step.total) == (2, len(points) - 1)


def test_the_progress_line_says_point_i_of_n_elapsed_and_the_eta_from_measured_launches(tmp_path):
    points = points_of(GRID)
    first = next_step(points, [], elapsed_s=5)
    assert first.progress == f"sweep point 1 of {len(points)}: {points[0].name}; elapsed 5s; ETA after the first launch"
    drive(tmp_path, points, search=False, stop_after=2)
    third = next_step(points, load_rows(tmp_path), elapsed_s=130)
    assert third.progress.startswith(f"sweep point 3 of {len(points)}: {points[2].name}; elapsed 2m 10s; ETA ")
    assert f"ETA {(len(points) - 2)}m 00s (2 launch(es) measured)" in third.progress
    assert "at most" in next_step(points, [], search=True).progress


def test_a_row_written_for_other_settings_under_the_name_is_redone(tmp_path):
    points = points_of(GRID)
    write(tmp_path, points, {**synthetic_row(points[0]), "point": {**points[0].key(), "window": 4096}})
    step = next_step(points, load_rows(tmp_path))
    assert step.point == points[0]
    assert "other settings" in step.redo[points[0].name]


SMALL = {"axes": {"block_size": [8], "budget": [4, 8, 16], "topk": [4]}}


def sim_launch(point):
    """A real row: the sim's engine benchmarks the point (scripts/bench_sweep_search.py's launch)."""
    return bench_script().sim_launch(point, runs=2)


def test_the_report_writes_markdown_json_and_plots_with_a_winner_per_use_case(tmp_path):
    points = points_of(SMALL)
    write(tmp_path, points, rejected_row(points[0].name, points[0].key(), "refused"))
    drive(tmp_path, points, search=False, launch=sim_launch)
    out = report(tmp_path, "grid", "ct200", points, load_rows(tmp_path), tolerance=0.01)
    document = json.loads((tmp_path / "sweep.json").read_text())
    assert set(document["winners"]) == {"latency", "long_context", "throughput"}
    assert document["launches"]["launched"] == len(points) - 1
    assert {w["name"] for w in document["winners"].values()} <= {points[1].name, points[2].name}
    for win in document["winners"].values():
        assert f"sglang_service_ddtree_budget: {win['name'].split('-b')[1].split('-')[0]}" in win["inventory"]
    markdown = (tmp_path / "sweep.md").read_text()
    assert "## Skipped" in markdown
    assert f"- {points[0].name}: SGLang rejected it: refused" in markdown
    pngs = [f for f in out["files"] if f.endswith(".png")]
    assert len(pngs) >= 3
    assert all((tmp_path / p.rsplit("/", 1)[-1]).stat().st_size > 1000 for p in pngs)
    assert all(f"]({p.rsplit('/', 1)[-1]})" in markdown for p in pngs)
    assert out["markdown"] == markdown


def test_the_report_in_check_mode_writes_nothing(tmp_path):
    points = points_of(SMALL)
    drive(tmp_path, points, search=False, launch=sim_launch, stop_after=2)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = report(tmp_path, "grid", "ct200", points, load_rows(tmp_path), write=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert out["winners"]["latency"]["name"] in {points[0].name, points[1].name}
