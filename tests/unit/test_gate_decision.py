"""The gate's verdict: metric phases, analysis phase, re-runs, inconclusive policy, the failure paragraph."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate_decision import (
    ACTION_PROMOTE,
    ACTION_ROLLBACK,
    FAILED,
    INCONCLUSIVE,
    SUCCESSFUL,
    Condition,
    action_for,
    analyze,
    evaluate_metric,
    failure_paragraph,
    needs_more_runs,
)

pytestmark = pytest.mark.host


def cond(values, threshold=3.0, higher=True, failure_limit=None, name="accept_length"):
    return Condition(
        name=name,
        description="Acceptance length (request-side, set code)",
        threshold=threshold,
        values=tuple(values),
        variable="spec_gate_min_accept_length",
        higher_is_better=higher,
        failure_limit=failure_limit,
    )


def test_metric_whose_whole_interval_clears_the_threshold_succeeds():
    assert evaluate_metric(cond([4.1, 4.2, 4.15]), 0.95).phase == SUCCESSFUL


def test_metric_whose_whole_interval_misses_the_threshold_fails():
    assert evaluate_metric(cond([2.1, 2.2, 2.15]), 0.95).phase == FAILED


def test_metric_whose_interval_straddles_the_threshold_is_inconclusive():
    result = evaluate_metric(cond([2.8, 3.3, 3.0]), 0.95)
    assert result.phase == INCONCLUSIVE
    assert "straddles" in result.reason


def test_a_single_run_can_never_decide():
    assert evaluate_metric(cond([9.0]), 0.95).phase == INCONCLUSIVE


def test_deterministic_metric_at_the_threshold_passes():
    assert evaluate_metric(cond([0.8, 0.8, 0.8], threshold=0.8), 0.95).phase == SUCCESSFUL


def test_lower_is_better_metric_is_judged_the_other_way():
    assert evaluate_metric(cond([0.02, 0.03, 0.025], threshold=0.05, higher=False), 0.95).phase == SUCCESSFUL
    assert evaluate_metric(cond([0.2, 0.3, 0.25], threshold=0.05, higher=False), 0.95).phase == FAILED


def test_failure_limit_fails_a_metric_even_while_its_interval_is_open():
    values = [2.0, 2.5, 4.0, 4.5]
    assert evaluate_metric(cond(values), 0.95).phase == INCONCLUSIVE
    limited = evaluate_metric(cond(values, failure_limit=1), 0.95)
    assert limited.phase == FAILED
    assert limited.failed_measurements == 2
    assert "failure limit 1" in limited.reason


def test_metric_without_measurements_is_an_error():
    with pytest.raises(ValueError, match="no measurements"):
        evaluate_metric(cond([]), 0.95)


def test_any_failed_metric_fails_the_analysis_even_beside_inconclusive_ones():
    analysis = analyze([cond([4.0, 4.1, 4.05]), cond([2.9, 3.2]), cond([0.5, 0.5, 0.5], threshold=0.8)], 0.95)
    assert analysis.phase == FAILED


def test_inconclusive_metric_makes_an_otherwise_successful_analysis_inconclusive():
    assert analyze([cond([4.0, 4.1, 4.05]), cond([2.9, 3.2])], 0.95).phase == INCONCLUSIVE


def test_all_successful_metrics_make_a_successful_analysis():
    assert analyze([cond([4.0, 4.1, 4.05]), cond([0.9, 0.9], threshold=0.8)], 0.95).phase == SUCCESSFUL


def test_no_conditions_is_a_successful_analysis_that_says_so():
    analysis = analyze([], 0.95, skipped=[{"name": "speedup", "reason": "no baseline"}])
    assert analysis.phase == SUCCESSFUL
    assert analysis.as_dict()["skipped"][0]["name"] == "speedup"


def test_rerun_only_while_inconclusive_and_budget_left():
    open_ = analyze([cond([2.9, 3.2])], 0.95)
    assert needs_more_runs(open_, runs_done=2, max_runs=5)
    assert not needs_more_runs(open_, runs_done=5, max_runs=5)
    assert not needs_more_runs(analyze([cond([2.0, 2.1, 2.05])], 0.95), runs_done=3, max_runs=5)


@pytest.mark.parametrize(
    ("phase", "policy", "action"),
    [
        (SUCCESSFUL, "keep_known_good", ACTION_PROMOTE),
        (FAILED, "keep_known_good", ACTION_ROLLBACK),
        (FAILED, "promote", ACTION_ROLLBACK),
        (INCONCLUSIVE, "keep_known_good", ACTION_ROLLBACK),
        (INCONCLUSIVE, "promote", ACTION_PROMOTE),
    ],
)
def test_action_follows_phase_and_inconclusive_policy(phase, policy, action):
    assert action_for(phase, policy) == action


def test_unknown_inconclusive_policy_names_the_variable():
    with pytest.raises(ValueError, match="spec_gate_inconclusive_policy"):
        action_for(INCONCLUSIVE, "coin_flip")


def test_failure_paragraph_names_metric_threshold_measured_value_and_restore():
    analysis = analyze([cond([2.1, 2.2, 2.15]), cond([0.95, 0.95], threshold=0.8, name="correctness")], 0.95)
    text = failure_paragraph(analysis, release="abc123", known_good="def456")
    assert "Acceptance length (request-side, set code) measured 2.15" in text
    assert "at least 3 (spec_gate_min_accept_length)" in text
    assert "def456 (known-good) was restored" in text
    assert text.count("measured") == 1, "only the metric that did not succeed is named"
    assert "\n" not in text


def test_unbounded_interval_is_written_as_null_in_json():
    d = analyze([cond([9.0])], 0.95).as_dict()
    assert d["metrics"][0]["interval"]["low"] is None
    assert d["metrics"][0]["interval"]["high"] is None
