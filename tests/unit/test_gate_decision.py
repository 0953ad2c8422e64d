"""The gate's verdict: metric phases, analysis phase, re-runs, inconclusive policy, the failure paragraph."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.gate_decision import (
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


# Relative speed: the candidate and known-good are two samples; a regression must exceed their measured noise.
def speed(values, reference, threshold=0.9):
    return Condition(
        name="regression",
        description="output_tok_s relative to known-good (set chat, short context, C=1)",
        threshold=threshold,
        values=tuple(values),
        variable="spec_gate_max_regression",
        reference=tuple(reference),
        reference_label="known-good kg measured now",
        fail_only_beyond_noise=True,
    )


# The demo's identical candidate: same config, tok/s within a few % of known-good's, run to run.
IDENTICAL = ([101.0, 96.0, 103.5, 99.0], [98.0, 102.5])


def test_identical_candidate_is_not_a_regression():
    analysis = analyze([speed(*IDENTICAL)], 0.95, final=True)
    assert analysis.phase == SUCCESSFUL
    assert action_for(analysis.phase, "keep_known_good") == ACTION_PROMOTE
    m = analysis.metrics[0]
    # The ratio of geometric means (speeds vary by factors), here within half a percent of the arithmetic one.
    assert m.interval.mean == pytest.approx(sum(IDENTICAL[0]) / 4 / (sum(IDENTICAL[1]) / 2), rel=0.005)
    assert m.interval.low < 1.0 < m.interval.high
    assert "known-good kg measured now" in m.reason


def test_open_relative_speed_asks_for_more_runs_before_the_limit():
    analysis = analyze([speed([101.0, 93.0], [98.0, 102.5])], 0.95, final=False)
    assert analysis.phase == INCONCLUSIVE
    assert needs_more_runs(analysis, runs_done=2, max_runs=4)


def test_regression_beyond_the_measured_noise_fails_without_waiting_for_the_limit():
    result = evaluate_metric(speed([70.0, 72.0, 71.0], [100.0, 101.5]), 0.95)
    assert result.phase == FAILED
    assert result.interval.high < 0.9


def test_relative_speed_ignores_the_failure_limit_one_slow_run_is_noise():
    c = Condition(**{**speed([100.0, 80.0, 101.0], [99.0, 101.0]).__dict__, "failure_limit": 0})
    result = evaluate_metric(c, 0.95, final=True)
    assert result.failed_measurements == 0
    assert result.phase == SUCCESSFUL


def test_absolute_metrics_stay_inconclusive_at_the_limit():
    assert evaluate_metric(cond([2.8, 3.3, 3.0]), 0.95, final=True).phase == INCONCLUSIVE


def test_reference_noise_widens_the_interval():
    tight = evaluate_metric(speed([95.0, 97.0, 96.0], [100.0, 100.0]), 0.95).interval
    noisy = evaluate_metric(speed([95.0, 97.0, 96.0], [90.0, 110.0]), 0.95).interval
    assert noisy.high - noisy.low > tight.high - tight.low
    assert noisy.mean == pytest.approx(tight.mean, rel=0.01)


def test_relative_metric_lists_both_samples():
    d = analyze([speed(*IDENTICAL)], 0.95).as_dict()["metrics"][0]
    assert d["measurements"] == IDENTICAL[0]
    assert d["reference_measurements"] == IDENTICAL[1]
    assert d["reference"] == "known-good kg measured now"


def test_failed_regate_of_the_known_good_release_says_it_keeps_serving_not_that_none_exists():
    analysis = analyze([cond([2.1, 2.2, 2.15])], 0.95)
    text = failure_paragraph(analysis, release="kg1", known_good="kg1")
    assert "No known-good release exists" not in text
    assert "was restored" not in text
    assert "Release kg1 is the known-good release itself" in text
    assert "keeps serving" in text
    assert "gate-regate-" in text


def test_identical_candidate_whose_mean_fell_below_the_threshold_still_passes_at_the_limit():
    # Measured on the loaded test machine: an identical candidate at 0.887 of known-good, 95 % CI 0.731-1.08.
    result = evaluate_metric(
        speed([422.3, 501.9, 406.1, 373.2], [413.0, 507.4, 506.6, 488.7]), 0.95, final=True
    )
    assert result.interval.mean < 0.9
    assert result.interval.low < 0.9
    assert result.interval.high > 1.0
    assert result.phase == SUCCESSFUL
    assert evaluate_metric(speed([422.3, 501.9, 406.1, 373.2], [413.0, 507.4, 506.6, 488.7]), 0.95).phase == (
        INCONCLUSIVE
    )


def test_slower_for_sure_but_not_beyond_the_allowance_stays_inconclusive_and_the_policy_decides():
    result = evaluate_metric(speed([88.0, 93.0, 86.0, 92.0], [100.0, 99.0, 101.0, 100.0]), 0.95, final=True)
    assert result.interval.low < 0.9 < result.interval.high < 1.0
    assert result.phase == INCONCLUSIVE
