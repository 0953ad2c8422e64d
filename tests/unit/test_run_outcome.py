"""The end-of-run blocks say what happened: one headline per outcome, the switch, known-good before and after, and
the failure's first sentence (module_utils/specgate/common/run_outcome.py)."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.run_outcome import deploy_outcome, first_sentence, sweep_outcome

OLD, NEW = "dflash-bs8-8d0b6c41a2", "dflash-bs16-3f1c0a9e27"
SWITCH = {"candidate": NEW, "active": OLD, "known_good": OLD, "switches": True}
GATE_FAILED = ("Gate failed for release dflash-bs16-3f1c0a9e27: Acceptance length measured 1.90, the gate requires at "
               f"least 3.0 (spec_gate_min_accept_length). Release {OLD} (known-good) was restored. Lower the threshold "
               "or fix the drafter.")  # fmt: skip


def serving(active: str, known_good: str, candidate: str = NEW, previous: str = "") -> dict:
    """specgate_release as published last: ``previous`` is what served before the last pointer change."""
    return {"id": candidate, "active_id": active, "known_good_id": known_good, "previous_active_id": previous or active}


def verdict(phase: str, decision: str) -> dict:
    return {"phase": phase, "decision": decision, "message": ""}


def test_promoted():
    said = deploy_outcome(SWITCH, serving(NEW, NEW), verdict("Successful", "promote"), None)
    assert said["headline"] == f"promoted: {NEW} passed the gate; it serves and is known-good"
    assert said["switched"] == f"yes, from {OLD}"
    assert said["known_good"] == f"{NEW} (was {OLD})"
    assert said["verdict"] == "Successful -> promote"
    assert said["reason"] == ""


def test_gate_failed_and_rolled_back_says_it_switched_and_came_back():
    """The README's bad candidate: switched, gated, rolled back. It once read 'switched no (already active)'."""
    failure = {"task": "Fail the play with the gate's reason", "msg": GATE_FAILED}
    said = deploy_outcome(SWITCH, serving(OLD, OLD, previous=NEW), verdict("Failed", "rollback"), failure)
    assert said["headline"] == f"rolled back: {NEW} was not promoted, it failed the gate; known-good {OLD} serves again"
    assert said["switched"] == f"yes, from {OLD}; back to {OLD}"
    assert said["serving"] == OLD
    assert said["known_good"] == f"{OLD} (unchanged)"
    assert said["reason"] == (f"Gate failed for release {NEW}: Acceptance length measured 1.90, the gate requires at "
                              "least 3.0 (spec_gate_min_accept_length). "
                              "(failed at: Fail the play with the gate's reason)")
    assert "was restored" not in said["reason"], "one sentence, not the paragraph"


def test_a_crash_during_the_load_names_the_candidate_and_what_serves_again():
    failure = {"task": "Wait for the candidate to become ready", "msg": f"Release {NEW} did not become ready: the "
               "engine exited during the load (status 1). Its journal: ..."}  # fmt: skip
    said = deploy_outcome(SWITCH, serving(OLD, OLD, previous=NEW), None, failure)
    assert said["headline"] == f"rolled back: {NEW} did not come up; {OLD} serves again"
    assert said["switched"] == f"yes, from {OLD}; back to {OLD}"
    assert said["verdict"] == "none (the gate did not run)"
    assert said["reason"].startswith(f"Release {NEW} did not become ready: the engine exited during the load")


@pytest.mark.parametrize(
    ("decision", "active", "known_good", "headline"),
    [("rollback", OLD, OLD, f"rolled back: {NEW} was not promoted, the gate stayed inconclusive "
                            f"(spec_gate_inconclusive_policy: keep_known_good); known-good {OLD} serves again"),
     ("promote", NEW, NEW, f"promoted by policy: the gate stayed inconclusive for {NEW} "
                           "(spec_gate_inconclusive_policy: promote); it serves and is known-good")],
    ids=["keep-known-good", "promote"],
)
def test_inconclusive_says_which_policy_decided(decision, active, known_good, headline):
    said = deploy_outcome(SWITCH, serving(active, known_good, previous=NEW), verdict("Inconclusive", decision), None)
    assert said["headline"] == headline
    assert said["verdict"] == f"Inconclusive -> {decision}"


def test_stopped_before_the_switch_says_nothing_changed_what_serves():
    failure = {"task": "Fetch the drafter", "msg": "The hub answered 404 for kimi-k26-dflash-b16: check "
               "model_weights_drafter_repo."}  # fmt: skip
    said = deploy_outcome(SWITCH, serving(OLD, OLD, candidate=OLD), None, failure)
    assert said["headline"] == "stopped before the switch: what serves did not change"
    assert said["switched"] == "no (stopped before the switch)"
    assert said["known_good"] == f"{OLD} (unchanged)"
    # Failed before the candidate was named: no switch fact at all
    early = deploy_outcome(None, serving(OLD, OLD, candidate=OLD), None, failure)
    assert early["headline"] == "stopped before the switch: what serves did not change"
    assert early["switched"] == "no"


def test_stopped_after_the_switch_says_the_candidate_serves_unproven():
    failure = {"task": "Renew the change lock's lease before the gate", "msg": "The lock is held by another run."}
    said = deploy_outcome(SWITCH, serving(NEW, OLD), None, failure)
    assert said["headline"].startswith(f"stopped after the switch, before a verdict: {NEW} serves unproven")
    assert said["switched"] == f"yes, from {OLD}"


def test_check_mode_says_nothing_changed_even_with_facts_about():
    said = deploy_outcome(None, serving(OLD, OLD, candidate=OLD), None, None, check_mode=True)
    assert said["headline"] == "check mode: nothing changed"
    assert said["switched"] == "no"


def test_a_known_good_release_that_fails_its_regate_keeps_serving():
    regate = {"candidate": OLD, "active": OLD, "known_good": OLD, "switches": False}
    said = deploy_outcome(regate, serving(OLD, OLD, candidate=OLD), verdict("Failed", "rollback"),
                          {"task": "Fail the play with the gate's reason", "msg": "Gate failed."})  # fmt: skip
    assert said["headline"].startswith(f"known-good {OLD} did not pass its re-gate (it failed the gate)")
    assert said["switched"] == f"no ({OLD} already served)"


def test_a_failed_first_release_with_nothing_to_restore_says_it_still_serves():
    first = {"candidate": NEW, "active": "", "known_good": "", "switches": True}
    said = deploy_outcome(first, serving(NEW, ""), verdict("Failed", "rollback"), {"task": "t", "msg": "Gate failed."})
    assert said["headline"] == (f"{NEW} was not promoted, it failed the gate; no known-good release exists to restore"
                                ": it still serves")  # fmt: skip
    assert said["switched"] == "yes, from nothing"
    assert said["known_good"] == "none yet (unchanged)"


def test_nothing_to_prove():
    settled = {"candidate": OLD, "active": OLD, "known_good": OLD, "switches": False}
    said = deploy_outcome(settled, serving(OLD, OLD, candidate=OLD), verdict("Settled", "keep"), None)
    assert said["headline"] == f"nothing to prove: {OLD} is known-good and passed this gate before"


SWEEP = {"id": "demo", "dir": "reports/demo/sweeps/demo", "known_good_before": OLD, "configs": 3, "ran": 2,
         "failed": ["crash"], "skipped": [], "winners": {}, "restored": True}


def test_a_sweep_that_ended_serves_known_good_as_before():
    said = sweep_outcome(SWEEP, serving(OLD, OLD, candidate="dflash-bs5-0123456789"), None)
    assert said["headline"] == "sweep demo: 2 of 3 config(s) measured, failed: crash"
    assert said["serving"] == f"{OLD} (known-good)"
    assert said["known_good"] == f"{OLD} (unchanged)"


def test_an_interrupted_sweep_says_so_and_what_serves_read_from_the_host():
    started = {"id": "demo", "dir": "reports/demo/sweeps/demo", "known_good_before": OLD}
    failure = {"task": "Wait for the candidate to become ready", "msg": "Release dflash-bs8-x did not become ready."}
    said = sweep_outcome(started, serving("dflash-bs8-x", OLD), failure)
    assert said["headline"] == "sweep demo stopped before its report: a re-run of the same id resumes it"
    assert said["serving"].startswith("dflash-bs8-x (not known-good: a sweep point")
    assert said["reason"] == ("Release dflash-bs8-x did not become ready. "
                              "(failed at: Wait for the candidate to become ready)")


def test_a_sweep_whose_known_good_changed_says_from_what():
    said = sweep_outcome(SWEEP, serving(NEW, NEW), None)
    assert said["known_good"] == f"{NEW} (was {OLD})"


def test_a_sweep_without_restore_names_the_last_point():
    said = sweep_outcome({**SWEEP, "restored": False}, serving(NEW, OLD), None)
    assert said["serving"] == f"{NEW} (the last point: spec_sweep_restore is off)"


@pytest.mark.parametrize(
    ("message", "sentence"),
    [("One. Two.", "One."),
     ("Out of range: - a\n- b", "Out of range"),
     ("first; second. third", "first"),
     ("x" * 300, "x" * 239 + "…")],
)
def test_first_sentence(message, sentence):
    assert first_sentence(message) == sentence
