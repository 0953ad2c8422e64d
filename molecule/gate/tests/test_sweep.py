"""A sweep on the gate host: two configs are deployed and benchmarked, a third crashes on start and is recorded
with its reason; rows land on the controller as each finishes; known-good serves again at the end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ansible_runner
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
SIM_ENV = {"SPECGATE_SIM_LOAD_SECONDS": "1", "SPECGATE_SIM_START_SECONDS": "0.3", "SPECGATE_SIM_TIME_SCALE": "0.2"}


def config(name: str, block_size: int, **extra_env: str) -> dict:
    return {
        "name": name,
        "profile": str(PROJECT / "configs" / "profiles" / "dflash-bs8.yml"),
        "vars": {
            "sglang_service_block_size": block_size,
            "sglang_service_drafter_path": f"/models/kimi-k26-dflash-b{block_size}",
            "sglang_service_extra_env": {**SIM_ENV, **extra_env},
        },
    }


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    private = tmp_path_factory.mktemp("sweep")
    reports = private / "reports"
    run = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(SCENARIO),
        playbook=str(SCENARIO / "sweep.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        extravars={
            "spec_sweep_id": "molecule",
            "spec_sweep_reports_dir": str(reports),
            "spec_sweep_configs": [
                config("bs8", 8),
                config("crash", 8, SPECGATE_SIM_FAULT_CRASH_DURING_LOAD="1"),
                config("bs16", 16),
            ],
        },
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "ANSIBLE_FACT_CACHING": "memory",
        },
    )
    return run, reports / "specgate-gate" / "sweeps" / "molecule"


def pointer(host, name: str) -> str:
    return Path(host.file(f"/opt/specgate/{name}").linked_to).name


def test_the_sweep_runs_every_config_and_restores_known_good(host, sweep):
    run, _ = sweep
    assert run.status == "successful", run.stdout.read()[-4000:]
    assert pointer(host, "active") == pointer(host, "known-good")
    assert host.service("sglang").is_running


def test_each_config_has_its_row_on_the_controller_and_the_crash_its_reason(sweep):
    _, out = sweep
    names = ("bs8", "crash", "bs16")
    rows = [json.loads((out / f"{i:02d}-{name}.json").read_text()) for i, name in enumerate(names, start=1)]
    assert [r["name"] for r in rows] == ["bs8", "crash", "bs16"]
    assert [r["failed"] for r in rows] == [False, True, False]
    assert "did not become ready" in rows[1]["reason"]
    assert rows[0]["release"] != rows[2]["release"]
    for row in (rows[0], rows[2]):
        assert row["speed_c1_short"] > 0
        assert row["tok_s_cmax"] > 0
        assert row["accept_long"] > 1


def test_the_report_names_a_winner_per_use_case_among_the_configs_that_ran(sweep):
    _, out = sweep
    report = json.loads((out / "sweep.json").read_text())
    assert {w["name"] for w in report["winners"].values()} <= {"bs8", "bs16"}
    assert set(report["winners"]) == {"latency", "long_context", "throughput"}
    markdown = (out / "sweep.md").read_text()
    assert "| crash |" in markdown
    assert "FAILED" in markdown


def test_the_sweep_publishes_what_its_summary_reads(sweep):
    run, out = sweep
    facts = [e["event_data"]["res"].get("ansible_facts", {}) for e in run.events if e["event"] == "runner_on_ok"]
    (published,) = [f["specgate_sweep"] for f in facts if "specgate_sweep" in f]
    assert published["failed"] == ["crash"]
    assert (published["configs"], published["ran"]) == (3, 2)
    assert Path(published["dir"]) == out
    assert published["restored"] is True
    assert {w["name"] for w in published["winners"].values()} <= {"bs8", "bs16"}
    # The configs carry inline vars on top of the profile: no -e @profile alone deploys them.
    assert published["winner_profiles"] == []
