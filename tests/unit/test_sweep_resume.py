"""Resume: finished points are not launched again; started and part-benchmarked points are redone."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.sweep.resume import load_rows, next_to_launch, plan
from ansible.module_utils.specgate.sweep.sweep_report import failed_row
from sweep_fakes import bench_script, lattice, synthetic_row


def write_rows(directory, rows):
    for row in rows:
        (directory / f"{row['name']}.json").write_text(json.dumps(row))


@pytest.mark.parametrize("search", [False, True])
def test_a_kill_between_points_then_a_resume_launches_only_the_rest(tmp_path, search):
    script = bench_script()
    points = lattice()
    whole = script.run_mode(points, synthetic_row, search=search, tolerance=0.01)
    write_rows(tmp_path, whole.rows[:3])  # the sweep was killed after its third point
    resumed = script.run_mode(points, synthetic_row, search=search, tolerance=0.01, rows=load_rows(tmp_path))
    assert resumed.launches == whole.launches[3:]
    assert script.winner_names(resumed) == script.winner_names(whole)


def test_a_point_killed_mid_bench_is_redone_and_nothing_else(tmp_path):
    points = lattice()
    done = [synthetic_row(p) for p in points[:2]]
    started = {"name": points[2].name, "status": "started", "point": points[2].key()}
    partial = {**synthetic_row(points[3]), "bench_complete": False}
    write_rows(tmp_path, [*done, started, partial])
    (tmp_path / "cut.json").write_text('{"name": "cut", ')  # a write the kill cut short
    (tmp_path / "sweep.json").write_text("{}")
    resumed = plan(points, load_rows(tmp_path))
    assert set(resumed.finished) == {points[0].name, points[1].name}
    assert "interrupted" in resumed.redo[points[2].name]
    assert "part-way" in resumed.redo[points[3].name]
    assert next_to_launch(points, load_rows(tmp_path), search=False).point == points[2]


def test_crashed_and_rejected_points_are_finished_but_other_settings_under_the_name_are_not():
    points = lattice()
    crashed = {**failed_row(points[0].name, None, "did not become ready"), "point": points[0].key()}
    rejected = {"name": points[1].name, "failed": True, "status": "rejected", "reason": "SGLang: bad topk",
                "point": points[1].key()}  # fmt: skip
    edited = {**synthetic_row(points[2]), "point": {**points[2].key(), "budget": 99}}
    resumed = plan(points, [crashed, rejected, edited])
    assert set(resumed.finished) == {points[0].name, points[1].name}
    assert "other settings" in resumed.redo[points[2].name]


@pytest.mark.parametrize("search", [False, True])
def test_a_point_sglang_rejects_is_skipped_with_its_message_and_never_launched(search):
    script = bench_script()
    points = lattice()
    rejected = {"bs8-b4-t4-w2048", "bs8-b8-t4"}

    def resolve(point):
        return "speculative_eagle_topk must be <= 8" if point.name in rejected else None

    result = script.run_mode(points, synthetic_row, search=search, tolerance=0.01, resolve=resolve)
    assert not rejected & set(result.launches)
    rows = {r["name"]: r for r in result.rows}
    for name in rejected:
        assert rows[name]["status"] == "rejected"
        assert rows[name]["reason"] == "SGLang rejected it: speculative_eagle_topk must be <= 8"
    assert result.winners["latency"]["name"] not in rejected
    again = script.run_mode(points, synthetic_row, search=search, tolerance=0.01, rows=result.rows, resolve=resolve)
    assert again.launches == []


@pytest.mark.parametrize("search", [False, True])
def test_a_point_that_crashes_on_start_is_recorded_and_the_sweep_goes_on(search):
    script = bench_script()
    points = lattice()

    def launch(point):
        if point.name == "bs8-b16-t4":
            raise RuntimeError("the server did not become ready: CUDA out of memory")
        return synthetic_row(point)

    lines: list[str] = []
    result = script.run_mode(points, launch, search=search, tolerance=0.01, say=lines.append)
    crashed = next(r for r in result.rows if r["name"] == "bs8-b16-t4")
    assert crashed["status"] == "failed"
    assert "CUDA out of memory" in crashed["reason"]
    assert result.launches.index("bs8-b16-t4") < len(result.launches) - 1  # launches went on after it
    assert "bs8-b16-t4" not in {w["name"] for w in result.winners.values()}
    assert len(lines) == len(result.launches)
    assert lines[0].startswith("sweep point 1 of ")
    assert "ETA after the first launch" in lines[0]
    assert "ETA" in lines[1]
    assert "launch(es) measured" in lines[1]


def test_in_search_mode_the_point_killed_mid_bench_is_the_next_launch_again(tmp_path):
    script = bench_script()
    points = lattice()
    whole = script.run_mode(points, synthetic_row, search=True, tolerance=0.01)
    by_name = {p.name: p for p in points}
    killed = by_name[whole.launches[3]]
    write_rows(tmp_path, [*whole.rows[:3], {"name": killed.name, "status": "started", "point": killed.key()}])
    assert next_to_launch(points, load_rows(tmp_path), search=True).point == killed
    resumed = script.run_mode(points, synthetic_row, search=True, tolerance=0.01, rows=load_rows(tmp_path))
    assert resumed.launches == whole.launches[3:]
    assert killed.name in {r["name"] for r in resumed.rows if r["status"] == "ok"}
    assert not [r for r in resumed.rows if r["status"] == "started"]
