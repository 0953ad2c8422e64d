"""The gate on a systemd host: the converged release passed and is known-good; candidates that must fail are
deployed through ansible-runner and end rolled back, with the reason in the failed play. API key on throughout."""

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
BASE = "/opt/specgate"
PORT = 32000
KEY = "sk-gate-molecule-4e1d7b93a06c"


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


def pointer(host, name: str) -> str:
    return Path(host.file(f"{BASE}/{name}").linked_to).name


def gate_result(host, release: str) -> dict:
    return json.loads(host.file(f"{BASE}/releases/{release}/gate.json").content_string)


def converge(tmp_path: Path, knobs: dict[str, str]) -> ansible_runner.Runner:
    """converge.yml again with sim knobs that change the release (its engine env is part of its id)."""
    return ansible_runner.run(
        private_data_dir=str(tmp_path),
        project_dir=str(SCENARIO),
        playbook=str(SCENARIO / "converge.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        extravars={"_gate_sim_knobs": knobs},
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "ANSIBLE_FACT_CACHING": "memory",
        },
    )


def failed_tasks(run: ansible_runner.Runner) -> list[tuple[str, dict]]:
    return [
        (e["event_data"].get("task", ""), e["event_data"].get("res", {}))
        for e in run.events
        if e.get("event") == "runner_on_failed"
    ]


def test_converged_release_passed_its_gate_and_is_known_good(host):
    active = pointer(host, "active")
    assert pointer(host, "known-good") == active
    gate = gate_result(host, active)
    assert gate["analysis"]["phase"] == "Successful"
    assert gate["action"] == "promote"
    assert {m["name"] for m in gate["analysis"]["metrics"]} == {"accept_length", "correctness"}
    fetched = EPHEMERAL / "reports" / "specgate-gate" / active
    assert json.loads((fetched / "gate.json").read_text()) == gate
    assert "| Acceptance length (request-side, set code) |" in (fetched / "gate.md").read_text()


def test_server_requires_the_api_key(host):
    probe = (
        "import urllib.request, urllib.error\n"
        f"try:\n    urllib.request.urlopen('http://127.0.0.1:{PORT}/server_info')\n    print(200)\n"
        "except urllib.error.HTTPError as e:\n    print(e.code)\n"
    )
    assert host.run(f'python3 -c "{probe}"').stdout.strip() == "401"


@pytest.mark.parametrize(
    ("knobs", "metric", "variable"),
    [
        (
            {"SPECGATE_SIM_ACCEPT_MULTIPLIER": "0.5"},
            "Acceptance length (request-side, set code) measured",
            "spec_gate_min_accept_length",
        ),
        ({"SPECGATE_SIM_WRONG_FRACTION": "0.25"}, "Coding-eval pass rate measured 0.75", "spec_gate_min_correctness"),
    ],
    ids=["lowered-acceptance", "quality-drop"],
)
def test_failing_candidate_is_rolled_back_and_the_play_fails_with_the_reason(host, tmp_path, knobs, metric, variable):
    known_good = pointer(host, "known-good")
    run = converge(tmp_path, knobs)
    assert run.status == "failed"
    (task, res), *_ = failed_tasks(run)
    assert task == "Fail the play with the gate's reason", (task, res)
    assert metric in res["msg"]
    assert variable in res["msg"]
    assert f"Release {known_good} (known-good) was restored." in res["msg"]
    # The host serves known-good again; the candidate keeps its verdict in its own directory.
    assert pointer(host, "active") == known_good
    assert pointer(host, "known-good") == known_good
    assert host.service("sglang").is_running
    candidates = [
        d
        for d in host.file(f"{BASE}/releases").listdir()
        if d != known_good and host.file(f"{BASE}/releases/{d}/gate.json").exists
    ]
    verdicts = [gate_result(host, d) for d in candidates]
    assert any(v["action"] == "rollback" and metric in v["message"] for v in verdicts)
