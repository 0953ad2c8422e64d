"""Repeats while launched, through the role (roles/spec_sweep/tasks/repeat.yml) against a sim serving on localhost:
a serving point within noise of an earlier point's row runs its deciding cells again (the benchmark's matrix cut to
them, no eval), the runs join its row, and a second round with the budget spent asks and runs nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.manifest import build
from ansible.module_utils.specgate.sweep.repeats import repeat_rounds

from integration.gate_harness import SMALL_MATRIX, gate_facts, start_sim, systemd_run_stand_in  # noqa: F401 - the stand-in is an autouse fixture of this module
from integration.preflight_runner import run_play

GRID = [{"name": "bs8", "axes": {"algorithm": ["DFLASH"], "block_size": [8, 16]},
         "vars": {"sglang_service_drafter_path": "/models/d"}}]  # fmt: skip
CONDITIONS = {"matrix": {"spec_gate_runs": 3}}
# Two context lengths in the matrix: a repeat of latency alone runs only the shortest one (at concurrency 1).
MATRIX = {**SMALL_MATRIX, "spec_gate_bench_eval": True, "spec_gate_bench_eval_problems": ["two_sum"],
          "spec_gate_bench_contexts": [{"name": "short", "tokens": 128}, {"name": "long", "tokens": 512}]}  # fmt: skip


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield from start_sim(tmp_path_factory, {})


def row(point, latency: list[float], digest: str, **values: float) -> dict:
    """A finished row: latency as given, acceptance and throughput as given (far apart: decided) or 1.0."""
    accept, throughput = values.get("accept", 1.0), values.get("throughput", 1.0)
    return {"name": point.name, "release": f"r-{point.name}", "failed": False, "status": "ok", "bench_complete": True,
            "point": point.key(), "conditions": digest, "cost": list(point.cost()),
            "shape": {"shortest_context": 128, "longest_context": 512, "concurrency": [1, 4]},
            "speed_c1_short": sum(latency) / 3, "accept_long": accept, "tok_s_cmax": throughput,
            "per_run": {"speed_c1_short": latency, "accept_long": [accept] * 3,
                        "tok_s_cmax": [throughput] * 3}}  # fmt: skip


@pytest.mark.slow
def test_a_point_within_noise_repeats_its_latency_cells_in_rounds_while_it_serves_until_its_budget(tmp_path, sim):
    points = expand(GRID)
    digest = build(points, CONDITIONS).conditions_digest
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    # The earlier point: latency close to the serving point's, the other use cases far above it (decided).
    earlier = row(points[0], [10.0, 10.3, 9.7], digest, accept=9.0, throughput=3000.0)
    (sweep_dir / f"{points[0].name}.json").write_text(json.dumps(earlier))
    serving = row(points[1], [10.1, 9.9, 10.0], digest, accept=5.0, throughput=900.0)
    # The row as one.yml keeps it, a fact each round rewrites (an extra var could not be); then the rounds as one.yml
    # runs them (an included loop: each round decides at its start whether it runs).
    keep = {"name": "the point's row", "ansible.builtin.set_fact": {"_spec_sweep_row": serving}}
    rounds = {"name": "the rounds", "ansible.builtin.include_role": {"name": "spec_sweep", "tasks_from": "repeats"},
              "vars": {"_spec_sweep_step": 0}}  # fmt: skip
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [keep, rounds]}]
    facts = gate_facts(tmp_path, sim, "cand", "")
    Path(facts["specgate_release"]["dir"]).mkdir(parents=True)
    Path(facts["specgate_release"]["dir"], "launch.yaml").write_text("api-key: gate-test-key\n")
    run = run_play(tmp_path, play, {
        **MATRIX, **facts, "spec_sweep_grid": GRID, "spec_sweep_max_repeats": 9, "_spec_sweep_resolved": [],
        "spec_gate_bench_crosscheck": True,  # the point's own benchmark cross-checks; its repeats must not
        "_spec_sweep_dir": str(sweep_dir), "_spec_sweep_conditions": CONDITIONS,
        "_spec_sweep_weights_drafter": None, "__spec_sweep_plan": {"repeat_rounds": repeat_rounds(3, 9)}})  # fmt: skip
    assert run.status == "successful", run.failed_tasks()
    plans = [e["event_data"]["res"] for e in run.events if e["event"] == "runner_on_ok"
             and e["event_data"]["task"].startswith("Ask which use cases")]  # fmt: skip
    # Round 1: within noise, 3 more (doubling 3 runs); round 2: the sim's own tok/s put it in the lead, 6 more (the
    # 9 of the budget spent): no third round is asked for.
    assert [p["wanted"] for p in plans] == [{"speed_c1_short": 3}, {"speed_c1_short": 6}]
    assert (plans[0]["contexts"], plans[0]["concurrency"]) == ([128], [1])
    jobs = [e["event_data"]["res"]["result"] for e in run.events if e["event"] == "runner_on_ok"
            and e["event_data"]["task"].startswith("Follow the benchmark")]  # fmt: skip
    assert [len(job["runs"]) for job in jobs] == [3, 6]
    for job in jobs:
        assert [c["tokens"] for c in job["settings"]["contexts"]] == [128]
        assert job["settings"]["concurrency"] == [1]
        assert {(c["context_tokens"], c["concurrency"]) for r in job["runs"] for c in r["cells"]} == {(128, 1)}
        assert not any(r.get("eval") for r in job["runs"]), "repeats measure speed only: the benchmark ran the eval"
        assert not any(r.get("crosscheck") for r in job["runs"]), "repeats measure speed only: it cross-checked"
    facts = [e["event_data"]["res"].get("ansible_facts", {}) for e in run.events if e["event"] == "runner_on_ok"]
    rows = [f["_spec_sweep_row"] for f in facts if "_spec_sweep_row" in f]
    assert rows[0] == serving
    final = rows[-1]
    assert final["repeats"] == {"speed_c1_short": 9}
    latency = final["per_run"]["speed_c1_short"]
    assert latency[:3] == [10.1, 9.9, 10.0]
    assert len(latency) == 12
    assert all(v > 10.3 for v in latency[3:]), "the sim's own tok/s at 128 tokens, C=1"
    assert final["speed_c1_short"] == pytest.approx(sum(latency) / 12)
    assert final["per_run"]["tok_s_cmax"] == [900.0] * 3, "a decided use case is not repeated"


def test_repeats_off_ask_nothing_and_run_nothing(tmp_path, sim):
    points = expand(GRID)
    serving = row(points[1], [10.1, 9.9, 10.0], build(points, CONDITIONS).conditions_digest)
    keep = {"name": "the point's row", "ansible.builtin.set_fact": {"_spec_sweep_row": serving}}
    rounds = {"name": "the rounds", "ansible.builtin.include_role": {"name": "spec_sweep", "tasks_from": "repeats"},
              "vars": {"_spec_sweep_step": 0}}  # fmt: skip
    run = run_play(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": [keep, rounds]}], {
        **gate_facts(tmp_path, sim, "cand", ""), "spec_sweep_grid": GRID, "spec_sweep_max_repeats": 0,
        "_spec_sweep_dir": str(tmp_path), "_spec_sweep_conditions": CONDITIONS,
        "__spec_sweep_plan": {"repeat_rounds": repeat_rounds(3, 0)}})  # fmt: skip
    assert run.status == "successful", run.failed_tasks()
    ran = [e["event_data"]["task"] for e in run.events if e["event"] == "runner_on_ok"]
    assert not [t for t in ran if t.startswith(("Ask which use cases", "Run the benchmark matrix"))], ran
