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


def test_a_point_within_noise_repeats_its_latency_cells_while_it_serves_and_stops_at_its_budget(tmp_path, sim):
    points = expand(GRID)
    digest = build(points, CONDITIONS).conditions_digest
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    # The earlier point: latency close to the serving point's, the other use cases far above it (decided).
    earlier = row(points[0], [100.0, 103.0, 97.0], digest, accept=9.0, throughput=3000.0)
    (sweep_dir / f"{points[0].name}.json").write_text(json.dumps(earlier))
    serving = row(points[1], [101.0, 99.0, 100.0], digest, accept=5.0, throughput=900.0)
    rounds = [{"name": f"round {n + 1}", "ansible.builtin.include_role": {"name": "spec_sweep", "tasks_from": "repeat"},
               "vars": {"_spec_sweep_step": 0, "_spec_sweep_repeat_round": n}} for n in range(2)]  # fmt: skip
    # The row as one.yml keeps it, a fact each round rewrites (an extra var could not be).
    keep = {"name": "the point's row", "ansible.builtin.set_fact": {"_spec_sweep_row": serving}}
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [keep, *rounds]}]
    facts = gate_facts(tmp_path, sim, "cand", "")
    Path(facts["specgate_release"]["dir"]).mkdir(parents=True)
    Path(facts["specgate_release"]["dir"], "launch.yaml").write_text("api-key: gate-test-key\n")
    run = run_play(tmp_path, play, {
        **MATRIX, **facts, "spec_sweep_grid": GRID, "spec_sweep_max_repeats": 3, "_spec_sweep_resolved": [],
        "_spec_sweep_dir": str(sweep_dir), "_spec_sweep_conditions": CONDITIONS,
        "_spec_sweep_weights_drafter": None})  # fmt: skip
    assert run.status == "successful", run.failed_tasks()
    plans = [e["event_data"]["res"] for e in run.events if e["event"] == "runner_on_ok"
             and e["event_data"]["task"].startswith("Ask which use cases")]  # fmt: skip
    assert [p["wanted"] for p in plans] == [{"speed_c1_short": 3}, {}], "round 2: the budget of 3 is spent"
    assert (plans[0]["contexts"], plans[0]["concurrency"]) == ([128], [1])
    benches = [e["event_data"]["res"] for e in run.events if e["event"] == "runner_on_ok"
               and e["event_data"]["task"].startswith("Run the benchmark matrix")]  # fmt: skip
    assert len(benches) == 1, "one repeat benchmark, in round 1 only"
    (job,) = [e["event_data"]["res"]["result"] for e in run.events if e["event"] == "runner_on_ok"
              and e["event_data"]["task"].startswith("Follow the benchmark")]  # fmt: skip
    settings = job["settings"]
    assert len(job["runs"]) == 3
    assert [c["tokens"] for c in settings["contexts"]] == [128]
    assert settings["concurrency"] == [1]
    assert {(c["context_tokens"], c["concurrency"]) for r in job["runs"] for c in r["cells"]} == {(128, 1)}
    assert not any(r.get("eval") for r in job["runs"]), "repeats measure speed only: the point's benchmark ran the eval"
    facts = [e["event_data"]["res"].get("ansible_facts", {}) for e in run.events if e["event"] == "runner_on_ok"]
    kept, final = [f["_spec_sweep_row"] for f in facts if "_spec_sweep_row" in f]
    assert kept == serving
    assert final["repeats"] == {"speed_c1_short": 3}
    latency = final["per_run"]["speed_c1_short"]
    assert latency[:3] == [101.0, 99.0, 100.0]
    assert len(latency) == 6
    assert all(v > 0 for v in latency[3:]), "the sim's own tok/s at 128 tokens, C=1"
    assert final["speed_c1_short"] == pytest.approx(sum(latency) / 6)
    assert final["per_run"]["tok_s_cmax"] == [900.0] * 3, "a decided use case is not repeated"
