"""What the spec_gate role tests share: the systemd-run stand-in, a sim serving a DFLASH release, a small benchmark
matrix, and one gate of a release on localhost as the earlier stages would publish it."""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from specgate_sim import testing

from integration.preflight_runner import RoleRun, run_role

# The gate judges the coding eval in a systemd sandbox; this test machine has no systemd as PID 1, so its stand-in
# (tests/sandbox_double/systemd-run, isolating by other means so the same probe passes) goes first on PATH.
SANDBOX_DOUBLE = Path(__file__).resolve().parents[1] / "sandbox_double"


@pytest.fixture(scope="module", autouse=True)
def systemd_run_stand_in() -> Iterator[None]:
    saved = os.environ["PATH"]
    os.environ["PATH"] = f"{SANDBOX_DOUBLE}{os.pathsep}{saved}"
    yield
    os.environ["PATH"] = saved


KEY = "gate-test-key"

SMALL_MATRIX = {
    "spec_gate_api_key": KEY,
    "spec_gate_bench_sets": ["code", "chat"],
    "spec_gate_bench_contexts": [{"name": "short", "tokens": 128}],
    "spec_gate_bench_concurrency": [1, 4],
    "spec_gate_bench_output_tokens": 32,
    "spec_gate_bench_min_requests": 4,
    "spec_gate_bench_warmup_requests": 1,
    "spec_gate_bench_eval_max_tokens": 512,
    "spec_gate_speedup_cell": {"set": "chat", "context": "short", "concurrency": 1},
    "spec_gate_regression_cell": {"set": "chat", "context": "short", "concurrency": 4},
    # Three runs: with two, a t interval on one degree of freedom straddles the threshold on a lucky draw's spread
    # (acceptance 5.12 and 5.65 gave 2.04-8.73 against 3), and the verdict depends on the sim's prompts.
    "spec_gate_runs": 3,
    "spec_gate_max_runs": 4,
}


def start_sim(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Iterator[object]:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8))
    args = f"--model-path {target} --speculative-algorithm DFLASH --speculative-draft-model-path {drafter}"
    proc = testing.start(
        [*args.split(), "--api-key", KEY, "--enable-metrics"],
        log_path=root / "sim.log",
        env={"SPECGATE_SIM_SEED": "5", **env},
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def write_release(release_dir: Path, key: str, record: dict | None = None) -> Path:
    """A release directory as sglang_service leaves it for the gate: launch.yaml holding the API key (the benchmark
    reads it there) and, when given, release.json."""
    release_dir.mkdir(parents=True, exist_ok=True)
    (release_dir / "launch.yaml").write_text(f"api-key: {key}\n")
    if record is not None:
        (release_dir / "release.json").write_text(json.dumps(record))
    return release_dir


def gate(tmp_path: Path, sim, release: str = "cand", known_good: str = "", check: bool = False, **overrides) -> RoleRun:
    write_release(tmp_path / "opt" / "releases" / release, KEY)
    role_vars = {**SMALL_MATRIX, "spec_gate_promote": False, **gate_facts(tmp_path, sim, release, known_good),
                 **overrides}  # fmt: skip
    return run_role(tmp_path / f"run-{release}", "spec_gate", role_vars, cmdline="--check" if check else "")


def gate_facts(tmp_path: Path, sim, release: str, known_good: str) -> dict:
    """What the earlier stages publish for a gate of ``release`` served by ``sim`` (its layout under tmp_path/opt)."""
    base = tmp_path / "opt"
    return {
        "specgate_release": {
            "id": release,
            "dir": str(base / "releases" / release),
            "port": sim.port,
            "known_good_id": known_good,
            "active_id": release,
            "api_key_set": True,
            # The benchmark becomes this user: the one running the tests (no sudo needed to become oneself).
            "user": getpass.getuser(),
            "cache_dir": str(tmp_path / "cache"),
        },
        "specgate_sglang_env": {"python": sys.executable, "base_dir": str(base)},
        "spec_gate_reports_dir": str(tmp_path / "reports"),
    }


def failure(run: RoleRun) -> tuple[str, str]:
    assert run.status == "failed", run.status
    (task, res), *_ = run.failed_tasks()
    if "results" in res:  # a loop: the failed items carry the messages
        return task, " ".join(r["msg"] for r in res["results"] if "msg" in r and "skip_reason" not in r)
    return task, res["msg"]
