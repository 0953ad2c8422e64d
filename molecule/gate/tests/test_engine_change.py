"""An engine change is a new release: with the real sglang_env stage in the play (engine.yml), the venv's
fingerprint (its installed set and applied patches) is part of the release id. A re-run that changes nothing
changes nothing (no restart, no gate); a new patch in the venv, with the server config untouched, is a new
release id, a restart (new MainPID) and a new verdict from the gate. Before, the old engine kept running and the
gate was skipped because the release had "already passed"."""

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
PATCH = {"name": "engine-change", "src": str(SCENARIO / "files" / "engine-change.patch"), "strip": 1}


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


def deploy(private: Path, patches: list[dict], **extra) -> ansible_runner.Runner:
    return ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(SCENARIO),
        playbook=str(SCENARIO / "engine.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        extravars={"_gate_engine_patches": patches, **extra},
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "ANSIBLE_PIPELINING": "true",
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "ANSIBLE_FACT_CACHING": "memory",
        },
    )


def failures(run: ansible_runner.Runner) -> list:
    return [
        (e["event_data"].get("task"), e["event_data"].get("res", {}).get("msg"))
        for e in run.events
        if e.get("event") == "runner_on_failed" and not e["event_data"].get("ignore_errors")
    ]


def changed_tasks(run: ansible_runner.Runner) -> list[str]:
    return [
        e["event_data"].get("task", "")
        for e in run.events
        if e.get("event") == "runner_on_ok" and e["event_data"].get("res", {}).get("changed")
    ]


def state(host) -> dict:
    release = Path(host.file(f"{BASE}/active").linked_to).name
    directory = f"{BASE}/releases/{release}"
    gate_file = host.file(f"{directory}/gate.json")
    return {
        "release": release,
        "known_good": Path(host.file(f"{BASE}/known-good").linked_to).name,
        "pid": int(host.run("systemctl show -p MainPID --value sglang").stdout.strip()),
        "gate": json.loads(gate_file.content_string) if gate_file.exists else None,
        "engine": json.loads(host.file(f"{directory}/engine.json").content_string),
    }


@pytest.fixture(scope="module")
def baseline(host, tmp_path_factory):
    """engine.yml without patches and without a gate (promoted on success, to spend no benchmark on the setup):
    the release now carries the venv's fingerprint."""
    run = deploy(
        tmp_path_factory.mktemp("engine-baseline"), [], _gate_engine_gate=False, sglang_service_promote_on_success=True
    )
    assert run.status == "successful", failures(run)
    return state(host)


@pytest.fixture(scope="module")
def patched(host, baseline, tmp_path_factory):
    """The same deployment with a patch in the venv: its config untouched, what its engine loads changed."""
    run = deploy(tmp_path_factory.mktemp("engine-patched"), [PATCH])
    assert run.status == "successful", failures(run)
    return state(host)


def test_baseline_release_names_what_its_engine_loads(baseline):
    assert baseline["known_good"] == baseline["release"]
    venv = baseline["engine"]["venv"]
    assert len(venv["fingerprint"]) == 16
    assert venv["installed"]["specgate-sim"] == "0.1.0"
    assert venv["patches"] == {}


def test_a_patch_in_the_venv_is_a_new_release_restarted_and_gated(host, baseline, patched):
    after = patched
    assert after["release"] != baseline["release"]
    # Only what the engine loads differs: same label, same server config, a new venv fingerprint.
    assert after["release"].rsplit("-", 1)[0] == baseline["release"].rsplit("-", 1)[0]
    old_dir, new_dir = (f"{BASE}/releases/{r}" for r in (baseline["release"], after["release"]))
    assert host.file(f"{new_dir}/server.yaml").content_string == host.file(f"{old_dir}/server.yaml").content_string
    assert after["engine"]["venv"]["fingerprint"] != baseline["engine"]["venv"]["fingerprint"]
    assert list(after["engine"]["venv"]["patches"]) == ["engine-change"]
    # A restart under the protocol, and a verdict of the gate on the new release.
    assert after["pid"] != baseline["pid"]
    assert host.service("sglang").is_running
    assert after["gate"]["release"] == after["release"]
    assert after["gate"]["action"] == "promote"
    assert after["known_good"] == after["release"]
    probe = "from specgate_sim._engine_change_marker import PATCHED_BY; print(PATCHED_BY)"
    marker = host.run(f"{BASE}/venv/bin/python -c '{probe}'")
    assert "engine change" in marker.stdout


def test_unchanged_engine_is_no_change_no_restart_no_gate(host, patched, tmp_path):
    run = deploy(tmp_path, [PATCH])
    assert run.status == "successful", failures(run)
    assert changed_tasks(run) == []
    after = state(host)
    assert (after["release"], after["pid"]) == (patched["release"], patched["pid"])
    assert after["gate"] == patched["gate"]  # settled: the gate did not measure again


def test_a_patch_removed_from_the_list_is_reversed_the_venv_is_the_baselines(host, baseline, patched, tmp_path):
    """Removing a patch from sglang_env_patches once left it applied: the venv now matches the declared patches,
    so its fingerprint is the baseline's again and the release it makes is the baseline's release."""
    run = deploy(tmp_path, [])
    assert run.status == "successful", failures(run)
    after = state(host)
    assert after["engine"]["venv"]["patches"] == {}
    assert after["engine"]["venv"]["fingerprint"] == baseline["engine"]["venv"]["fingerprint"]
    assert after["release"] == baseline["release"]
    probe = "import specgate_sim._engine_change_marker"
    assert host.run(f"{BASE}/venv/bin/python -c '{probe}'").rc != 0, "the patch's file is gone from the venv"
