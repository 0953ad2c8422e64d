"""sglang_monitoring's textfile entry point on this machine: specgate.prom says which release the host serves (its
pointers), whether it is known-good, and what its gate measured (its gate.json), as the node exporter's textfile
collector reads it; written only when that changed, nothing in check mode, nothing on a host serving no release."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from integration.preflight_runner import run_play

RELEASE, OLDER = "dflash-bs8-0123456789", "dflash-bs16-abcdef0123"
SERVER = {"model-path": "/models/t", "speculative-algorithm": "DFLASH", "speculative-dflash-block-size": 8}
GATE = {"schema": "specgate.gate/v1", "release": RELEASE, "action": "promote", "analysis": {"phase": "Successful",
        "metrics": [{"name": "accept_length", "threshold": 3.0, "interval": {"mean": 5.04}},
                    {"name": "correctness", "threshold": 0.9, "interval": {"mean": 1.0}},
                    {"name": "regression", "threshold": 0.5, "interval": {"mean": 0.93}}]}}  # fmt: skip


def host(tmp_path: Path, *, gate: dict | None = GATE, known_good: str = RELEASE, active: str | None = RELEASE) -> Path:
    base = tmp_path / "opt-specgate"
    for release in (RELEASE, OLDER):
        (base / "releases" / release).mkdir(parents=True)
        (base / "releases" / release / "server.yaml").write_text(yaml.safe_dump(SERVER))
    if gate is not None:
        (base / "releases" / RELEASE / "gate.json").write_text(json.dumps(gate))
    if active:
        (base / "active").symlink_to(base / "releases" / active)
    (base / "known-good").symlink_to(base / "releases" / known_good)
    return base


def textfile(tmp_path: Path, base: Path, cmdline: str = "", name: str = "runner"):
    settings = {"specgate_release": {"dir": str(base / "releases" / RELEASE)},
                "sglang_monitoring_textfile_dir": str(tmp_path / "textfile"),
                # This machine is no replica: no node exporter installed here (molecule/fleet installs it).
                "sglang_monitoring_node_exporter_install": False}
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "sglang_monitoring", "tasks_from": "textfile"}}]}]
    run = run_play(tmp_path, play, settings, cmdline, private_name=name)
    assert run.status == "successful", run.failed_tasks()
    return run


def samples(path: Path) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(path.read_text()) for s in family.samples}


@pytest.mark.slow
def test_the_served_release_and_its_gate_are_written_once_then_left_alone(tmp_path: Path) -> None:
    first = textfile(tmp_path, host(tmp_path))
    prom = tmp_path / "textfile" / "specgate.prom"
    assert samples(prom) == {
        ("specgate_release_info", (("algorithm", "DFLASH"), ("block_size", "8"), ("known_good", "true"),
                                   ("profile", "dflash-bs8"), ("release", RELEASE))): 1.0,
        ("specgate_gate_passed", (("release", RELEASE),)): 1.0,
        ("specgate_gate_accept_length", (("release", RELEASE),)): 5.04,
        ("specgate_gate_correctness", (("release", RELEASE),)): 1.0,
        ("specgate_gate_regression", (("release", RELEASE),)): 0.93,
        ("specgate_gate_threshold", (("metric", "accept_length"), ("release", RELEASE))): 3.0,
        ("specgate_gate_threshold", (("metric", "correctness"), ("release", RELEASE))): 0.9,
        ("specgate_gate_threshold", (("metric", "regression"), ("release", RELEASE))): 0.5,
    }
    assert oct(os.stat(prom).st_mode & 0o777) == "0o644"
    assert "Write what the host serves and what its gate measured to specgate.prom, atomically" in first.changed_tasks()
    again = textfile(tmp_path, tmp_path / "opt-specgate", name="again")
    assert again.changed_tasks() == []


def test_a_release_serving_unproved_says_so_and_one_never_gated_has_no_gate_numbers(tmp_path: Path) -> None:
    textfile(tmp_path, host(tmp_path, gate=None, known_good=OLDER))
    written = samples(tmp_path / "textfile" / "specgate.prom")
    assert [(name, dict(labels)["known_good"]) for name, labels in written] == [("specgate_release_info", "false")]


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    textfile(tmp_path, host(tmp_path), cmdline="--check")
    assert not (tmp_path / "textfile" / "specgate.prom").exists()


def test_a_host_serving_no_release_yet_gets_no_file(tmp_path: Path) -> None:
    run = textfile(tmp_path, host(tmp_path, active=None))
    assert run.changed_tasks() == []
    assert not (tmp_path / "textfile").exists()
