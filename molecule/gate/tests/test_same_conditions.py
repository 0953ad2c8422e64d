"""Issue 12 item 5 on a systemd host: a candidate identical to known-good (only the sim seed differs, which makes
it a new release) is compared with known-good benchmarked right before the switch, under the same conditions,
and passes the relative-speed check. Prints the ratio and its CI against the stored runs (the verdict before)
and against the same-run measurement (after)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ansible_runner
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
# The gate's own statistics, as Ansible imports them (testinfra runs without tests/conftest.py): the project's
# collection, whose paths module puts module_utils on ansible.module_utils' path.
sys.path.insert(0, str(PROJECT / "local_collections"))
import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path
from ansible.module_utils.specgate.gate.bench_stats import mean_interval  # noqa: E402 - needs the path set above

EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
BASE = "/opt/specgate"
CELL = ("chat", "short", 1)  # spec_gate_regression_cell's default


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


def pointer(host, name: str) -> str:
    return Path(host.file(f"{BASE}/{name}").linked_to).name


def gate_result(host, release: str) -> dict:
    return json.loads(host.file(f"{BASE}/releases/{release}/gate.json").content_string)


def cell_values(runs: list[dict]) -> list[float]:
    return [
        c["output_tok_s"] for r in runs for c in r["cells"] if (c["set"], c["context"], c["concurrency"]) == CELL
    ]


def test_identical_candidate_passes_the_relative_speed_check_against_known_good_measured_now(host, tmp_path):
    known_good = pointer(host, "known-good")
    stored = cell_values(gate_result(host, known_good)["runs"])
    run = ansible_runner.run(
        private_data_dir=str(tmp_path),
        project_dir=str(SCENARIO),
        playbook=str(SCENARIO / "same_conditions.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        extravars={"_gate_sim_knobs": {"SPECGATE_SIM_SEED": "7"}, "spec_gate_max_regression": 0.1},
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "ANSIBLE_FACT_CACHING": "memory",
        },
    )
    failed = [e["event_data"] for e in run.events if e.get("event") == "runner_on_failed"]
    assert run.status == "successful", failed
    active = pointer(host, "active")
    assert active != known_good, "the seed knob makes a new release"
    assert pointer(host, "known-good") == active
    gate = gate_result(host, active)
    reference = gate["regression_reference"]
    assert reference["source"] == "measured_now"
    assert reference["release"] == known_good
    regression = next(m for m in gate["analysis"]["metrics"] if m["name"] == "regression")
    assert regression["phase"] == "Successful", regression
    assert regression["reference_measurements"] == cell_values(reference["runs"])
    # The verdict before issue 12: each candidate run over the mean of known-good's stored runs, one-sample CI.
    ref = sum(stored) / len(stored)
    before = mean_interval([v / ref for v in regression["measurements"]], 0.95)
    after = regression["interval"]
    print(
        f"\nidentical candidate, output tok/s relative to known-good over {len(regression['measurements'])} run(s): "
        f"against its stored runs (before) {before.mean:.3f}, CI {before.low:.3f}-{before.high:.3f}; "
        f"against it measured now (after) {after['mean']:.3f}, CI {after['low']:.3f}-{after['high']:.3f} "
        f"-> {regression['phase']}"
    )
    fetched = EPHEMERAL / "reports" / "specgate-gate" / active / "gate.md"
    assert f"Regression reference: known-good {known_good} measured now" in fetched.read_text()
