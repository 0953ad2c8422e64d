"""A deploy judges the service's and the gate's settings once (issue 27): deploy.yml's validate entry points judge them
before anything on the host changes, and each stage's own run skips judging the very same inputs again. Inputs that
changed in between (a sweep's point sets its own variables) are judged again, and refused there. sglang_service's
and spec_gate's entry points in deploy.yml's order, on local hosts, only what validates (nothing after it can run)."""

from __future__ import annotations

import pytest

from integration.preflight_runner import CaseRuns, run_cases
from integration.test_sglang_service_validation import ENGINE_FACT, ENV_FACT, GOOD

pytestmark = pytest.mark.slow

SERVICE_JUDGES = "Check the restart protocol's bounds"  # one of sglang_service's validate.yml tasks
GATE_JUDGES = "Check the run counts and the confidence level"  # one of spec_gate's validate.yml tasks
SERVICE_AGAIN = "Check the service's own settings and their fit to the host's GPUs, unless this run judged these inputs"
GATE_AGAIN = "Check the gate's thresholds and the benchmark matrix before benchmarking, unless this run judged them"
STAGE_TAGS = "--tags sglang_service_validate,spec_gate_validate"
# What the service stage publishes when it switches (a later tag than validate's), for the gate's own input checks.
RELEASE_FACT = {"id": "candidate", "dir": "/nonexistent/specgate/releases/candidate", "port": 31090,
                "known_good_id": None, "api_key_set": False}

# What changes between the validate entry points and the stages' own runs, per case: nothing, or one value each stage
# refuses (as a sweep's point sets its variables after the entry points judged the sweep's own).
CASES = {
    "same": {},
    "service_changed": {"sglang_service_block_size": 0},
    "gate_changed": {"spec_gate_runs": 1},
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> CaseRuns:
    validate_entry = [
        {"name": f"Validate - {role}", "tags": ["always"],
         "ansible.builtin.include_role": {"name": role, "tasks_from": "validate", "apply": {"tags": ["always"]}}}
        for role in ("sglang_service", "spec_gate")
    ]  # fmt: skip
    play = [{
        "hosts": "all", "gather_facts": False,
        "pre_tasks": [{"name": "Hand over the sglang_env facts", "tags": ["always"],
                       "ansible.builtin.set_fact": {"specgate_sglang_env": ENV_FACT, "specgate_engine": ENGINE_FACT,
                                                    "specgate_release": RELEASE_FACT}}],
        "tasks": [*validate_entry,
                  *({"name": f"Change what case {name} changes", "tags": ["always"],
                     "ansible.builtin.set_fact": between, "when": f"inventory_hostname == '{name}'"}
                    for name, between in CASES.items() if between),
                  {"name": "The service stage", "ansible.builtin.import_role": {"name": "sglang_service"}},
                  {"name": "The gate stage", "ansible.builtin.import_role": {"name": "spec_gate"}}],
    }]  # fmt: skip
    return run_cases(tmp_path_factory.mktemp("validate-once"), play, dict.fromkeys(CASES, GOOD), cmdline=STAGE_TAGS)


def outcomes(runs: CaseRuns, case: str, task: str) -> list[str]:
    return [e["event"].removeprefix("runner_on_") for e in runs.events[case]
            if e["event"] in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
            and e["event_data"].get("task") == task]  # fmt: skip


def test_the_same_inputs_are_judged_once_and_the_stages_go_on(runs) -> None:
    assert runs.failures("same") == [], runs.said("same")
    assert outcomes(runs, "same", SERVICE_AGAIN) == ["skipped"]
    assert outcomes(runs, "same", GATE_AGAIN) == ["skipped"]
    assert outcomes(runs, "same", SERVICE_JUDGES) == ["ok"]
    assert outcomes(runs, "same", GATE_JUDGES) == ["ok"]
    # The stages' own checks after validate still ran: the service named its candidate, the gate took the release.
    assert outcomes(runs, "same", "Name the candidate release after its content") == ["ok"]
    assert outcomes(runs, "same", "Require the release facts of the sglang_service stage") == ["ok"]


def test_a_service_setting_changed_since_the_entry_point_is_judged_again_and_refused(runs) -> None:
    assert outcomes(runs, "service_changed", SERVICE_JUDGES) == ["ok", "ok"]
    (failure,) = runs.failures("service_changed")
    assert failure["task"] == "Render the deployment for the engine the venv stage installs"
    assert "sglang_service_block_size" in runs.said("service_changed")
    assert runs.changed("service_changed") == []


def test_a_gate_setting_changed_since_the_entry_point_is_judged_again_and_refused(runs) -> None:
    assert outcomes(runs, "gate_changed", SERVICE_AGAIN) == ["skipped"]  # the service's inputs are the same
    assert outcomes(runs, "gate_changed", GATE_JUDGES) == ["ok", "failed"]
    assert "spec_gate_runs (1) must be at least 2" in runs.said("gate_changed")
    assert runs.changed("gate_changed") == []
