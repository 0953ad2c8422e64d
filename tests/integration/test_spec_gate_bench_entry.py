"""playbooks/bench.yml's role entry (tasks_from: benchmark): benchmark without a verdict, store a no-speculation
baseline, and the speedup gate that reads it back; a speculative release is never stored as the baseline."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import sys
from pathlib import Path

import ansible_runner
import pytest
from specgate_sim import testing

from integration.gate_harness import write_release
from integration.preflight_runner import PROJECT_ROOT, VENV_BIN, RoleRun

pytestmark = pytest.mark.slow

KEY = "bench-entry-key"
MATRIX = {
    "spec_gate_api_key": KEY,
    "spec_gate_bench_sets": ["chat"],
    "spec_gate_bench_contexts": [{"name": "short", "tokens": 128}],
    "spec_gate_bench_concurrency": [1],
    "spec_gate_bench_output_tokens": 64,
    "spec_gate_bench_min_requests": 4,
    "spec_gate_bench_warmup_requests": 1,
    "spec_gate_bench_eval": False,
    "spec_gate_min_accept_length": None,
    "spec_gate_min_correctness": None,
    "spec_gate_max_regression": None,
    "spec_gate_runs": 2,
    "spec_gate_promote": False,
}


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    return testing.write_model_dir(root / "target", testing.TARGET_CONFIG), testing.write_model_dir(
        root / "drafter", testing.drafter_config(8)
    )


def _sim(tmp_path: Path, args: str):
    # Simulated step times must dominate the sim's own CPU cost, or speed comparisons measure Python overhead.
    proc = testing.start(
        [*args.split(), "--api-key", KEY, "--enable-metrics"], log_path=tmp_path / "sim.log", time_scale=0.2
    )
    proc.wait_ready()
    return proc


def run_play(tmp_path: Path, tasks_from: str, sim, release: str, extra: dict) -> RoleRun:
    private = tmp_path / f"runner-{release}-{tasks_from}"
    (private / "project").mkdir(parents=True)
    (private / "inventory").mkdir()
    (private / "inventory" / "hosts").write_text(
        f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n", encoding="utf-8"
    )
    include = {"ansible.builtin.include_role": {"name": "spec_gate", "tasks_from": tasks_from}}
    play = [
        {"name": "spec_gate entry", "hosts": "localhost", "gather_facts": False, "tasks": [{"name": "Run", **include}]}
    ]
    (private / "project" / "play.yml").write_text(json.dumps(play), encoding="utf-8")
    base = tmp_path / "opt"
    write_release(base / "releases" / release, KEY)
    extravars = {
        **MATRIX,
        "specgate_release": {
            "id": release,
            "dir": str(base / "releases" / release),
            "port": sim.port,
            "known_good_id": "",
            "api_key_set": True,
            # The benchmark becomes this user: the one running the tests (no sudo needed to become oneself).
            "user": getpass.getuser(),
            "cache_dir": str(tmp_path / "cache"),
        },
        "specgate_sglang_env": {"python": sys.executable, "base_dir": str(base)},
        "spec_gate_reports_dir": str(tmp_path / "reports"),
        **extra,
    }
    (private / "env").mkdir()
    (private / "env" / "extravars").write_text(json.dumps(extravars), encoding="utf-8")
    result = ansible_runner.run(
        private_data_dir=str(private),
        playbook="play.yml",
        quiet=True,
        envvars={
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
            "ANSIBLE_FACT_CACHING": "memory",
        },
    )
    return RoleRun(status=result.status, events=list(result.events))


def test_baseline_is_stored_by_bench_and_judged_by_the_speedup_gate(tmp_path, target):
    model, drafter = target
    nospec = _sim(tmp_path, f"--model-path {model}")
    try:
        run = run_play(tmp_path, "benchmark", nospec, "nospec",
                       {"spec_gate_bench_store_baseline": True, "spec_gate_bench_progress_interval": 0.2})
    finally:
        nospec.stop()
    assert run.status == "successful", run.failed_tasks()
    # The benchmark is followed by one task that prints where it is on each poll; its report is gone at the end.
    lines = [line.strip() for e in run.events for line in e.get("stdout", "").splitlines() if "] bench: " in line]
    assert any(line.startswith("[localhost] bench: ") and " elapsed" in line for line in lines), lines
    assert not (tmp_path / "cache" / "bench-progress.json").exists()
    assert json.loads((tmp_path / "reports" / "localhost" / "nospec" / "bench.json").read_text())["runs"]
    (baseline,) = (tmp_path / "opt" / "baselines").glob("*.json")
    stored = json.loads(baseline.read_text())
    assert stored["target"] == f"{model}@main"
    assert len(stored["runs"]) == 2

    spec = _sim(
        tmp_path, f"--model-path {model} --speculative-algorithm DFLASH --speculative-draft-model-path {drafter}"
    )
    try:
        gated = run_play(
            tmp_path,
            "main",
            spec,
            "dflash",
            {"spec_gate_min_speedup": 1.05, "spec_gate_runs": 3, "spec_gate_max_runs": 5},
        )
        refused_late = run_play(tmp_path, "benchmark", spec, "dflash", {"spec_gate_bench_store_baseline": True})
        # With the release's public config on the host, as sglang_service writes it: refused before benchmarking.
        (tmp_path / "opt" / "releases" / "dflash" / "server.yaml").write_text("speculative-algorithm: DFLASH\n")
        (tmp_path / "reports" / "localhost" / "dflash" / "bench.json").unlink()
        shutil.rmtree(tmp_path / "runner-dflash-benchmark")
        refused = run_play(tmp_path, "benchmark", spec, "dflash", {"spec_gate_bench_store_baseline": True})
    finally:
        spec.stop()
    assert refused_late.status == "failed"
    (_task, res), *_ = refused_late.failed_tasks()
    assert "a baseline must be the same target without speculation" in res["msg"]
    assert gated.status == "successful", [res["msg"] for _task, res in gated.failed_tasks()]
    gate = json.loads((tmp_path / "opt" / "releases" / "dflash" / "gate.json").read_text())
    (speedup,) = gate["analysis"]["metrics"]
    assert speedup["name"] == "speedup"
    assert speedup["interval"]["low"] > 1.05
    assert refused.status == "failed"
    (task, res), *_ = refused.failed_tasks()
    assert task == "Refuse to store a speculative release as the no-speculation baseline, before benchmarking it"
    assert "no benchmark was run" in res["msg"]
    assert not (tmp_path / "reports" / "localhost" / "dflash" / "bench.json").exists(), "a benchmark was spent"
    assert [p.name for p in (tmp_path / "opt" / "baselines").iterdir()] == [baseline.name]
