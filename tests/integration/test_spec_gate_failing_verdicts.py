"""The spec_gate role failing a candidate on localhost against a sim that drafts worse or codes worse: the play fails
naming the metric, its threshold variable and the measured value, and only the metric that failed. (Apart from
test_spec_gate_role.py so the two modules' sims and gates run in two pytest workers side by side.)"""

from __future__ import annotations

import pytest

from integration.gate_harness import failure, gate, start_sim, systemd_run_stand_in  # noqa: F401 - the stand-in is an autouse fixture of this module

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def low_acceptance_sim(tmp_path_factory):
    yield from start_sim(tmp_path_factory, {"SPECGATE_SIM_ACCEPT_MULTIPLIER": "0.5"})


@pytest.fixture(scope="module")
def wrong_code_sim(tmp_path_factory):
    yield from start_sim(tmp_path_factory, {"SPECGATE_SIM_WRONG_FRACTION": "0.25"})


def test_lowered_acceptance_fails_the_play_naming_metric_threshold_and_measured_value(tmp_path, low_acceptance_sim):
    task, msg = failure(gate(tmp_path, low_acceptance_sim))
    assert task == "Fail the play with the gate's reason"
    assert msg.startswith("Gate failed for release cand: Acceptance length (request-side, set code) measured ")
    assert "the gate requires at least 3 (spec_gate_min_accept_length)" in msg
    measured = float(msg.split(" measured ")[1].split(" ")[0])
    assert 1.0 < measured < 3.0
    assert "Coding-eval" not in msg


def test_quality_drop_trips_the_correctness_gate(tmp_path, wrong_code_sim):
    _task, msg = failure(gate(tmp_path, wrong_code_sim))
    assert "Coding-eval pass rate measured 0.75" in msg
    assert "at least 0.9 (spec_gate_min_correctness)" in msg
    assert "Acceptance length" not in msg
