"""scripts/bench_noop_redeploy.py reads a run's events right: what changed, which tasks were slowest, what failed,
and says whether the median meets the goal."""

from __future__ import annotations

from script_loader import load_script


def _bench():
    return load_script("bench_noop_redeploy")


def _event(kind: str, task: str, role: str = "", duration: float | None = None, path: str = "", **res) -> dict:
    data = {"task": task, "role": role, "res": res, "task_path": path}
    if duration is not None:
        data["duration"] = duration
    return {"event": kind, "event_data": data}


def test_changed_slowest_and_failed_tasks_are_read_from_the_events():
    bench = _bench()
    changed, slowest, failed = bench.summarize([
        _event("runner_on_ok", "Copy the wheelhouse", "sglang_env", 31.4, changed=True),
        _event("runner_on_ok", "Gathering Facts", duration=1.9, changed=False),
        _event("runner_on_skipped", "Install from git", "sglang_env", 0.01),
        _event("runner_on_ok", "Plan", "model_weights", 1.1, changed=False),
        # The run's own rollout report, written on the controller: honest about it, no change of the host.
        _event("runner_on_ok", "Write fleet.md", "fleet_rollout", 0.2,
               "/checkout/roles/fleet_rollout/tasks/report.yml:27", changed=True),
        _event("runner_on_failed", "Probe", "cuda_toolkit", 2.0, msg="nvcc missing"),
        {"event": "runner_on_failed",  # ignore_errors: the play goes on, the run is not failed by it
         "event_data": {"task": "Tolerated", "role": "", "ignore_errors": True, "res": {"msg": "x"}}},
    ])
    assert changed == ["sglang_env: Copy the wheelhouse"]
    assert slowest == [(31.4, "sglang_env: Copy the wheelhouse"), (1.9, "Gathering Facts"),
                       (1.1, "model_weights: Plan"), (0.2, "fleet_rollout: Write fleet.md")]
    assert failed == ["cuda_toolkit: Probe: nvcc missing"]


def test_the_verdict_names_the_median_and_whether_it_meets_the_goal():
    bench = _bench()
    assert bench.verdict([31.0, 29.0, 40.0]) == (
        "median 31.0 s over 3 run(s) (min 29.0, max 40.0); misses the goal of <= 30 s")
    assert bench.verdict([22.5, 20.0, 24.1]).endswith("; meets the goal of <= 30 s")
    assert bench.verdict([30.0]).endswith("; meets the goal of <= 30 s")  # the goal itself meets it
