"""What a run left on a host, said from what happened, for the end-of-run blocks (playbooks/templates/summary_*).

A deploy's block is worked out from four published facts: ``specgate_switch`` (what served and was known-good when
the run named its candidate, and whether it switches), ``specgate_release`` (what serves and is known-good now),
``specgate_verdict`` (the gate's phase and decision) and ``specgate_failure`` (the task that failed and its message,
from the play's rescue). Each outcome (promoted, failed the gate and rolled back, did not come up and rolled back,
inconclusive, stopped before or after the switch, check mode) has its own headline; the switch, known-good before
and after, and the failure's first sentence are stated once each. The failure's whole paragraph is printed by the
task that failed; the block names it in one sentence, so no paragraph is printed twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Long enough for a gate's first sentence (metric, measured value, threshold, variable); a longer one is cut.
REASON_CHARS = 240


def first_sentence(message: str, limit: int = REASON_CHARS) -> str:
    """The first sentence of a failure message, on one line, at most ``limit`` characters."""
    text = " ".join(str(message or "").split())
    # A sentence ends at '. ', or where a list of problems (': - ') or a second clause ('; ') starts.
    ends = [(cut, end) for end in (". ", ": - ", "; ") if 0 < (cut := text.find(end)) < limit]
    if ends:
        cut, end = min(ends)
        return text[: cut + (1 if end == ". " else 0)]
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _known_good_line(before: str, after: str) -> str:
    now = after or "none yet"
    if before == after:
        return f"{now} (unchanged)"
    return f"{now} (was {before or 'none'})"


def _reason(failure: Mapping[str, Any]) -> str:
    if not failure:
        return ""
    sentence = first_sentence(str(failure.get("msg", "")))
    task = str(failure.get("task", "") or "")
    return f"{sentence} (failed at: {task})" if task else sentence


def deploy_outcome(
    switch: Mapping[str, Any] | None,
    release: Mapping[str, Any] | None,
    verdict: Mapping[str, Any] | None,
    failure: Mapping[str, Any] | None,
    check_mode: bool = False,
) -> dict[str, str]:
    """The end-of-run block of deploy.yml for one host: ``headline``, ``release``, ``switched``, ``serving``,
    ``known_good``, ``verdict`` and ``reason`` ('' when the run did not fail), each one line."""
    switch, release, verdict, failure = switch or {}, release or {}, verdict or {}, failure or {}
    candidate = str(switch.get("candidate") or release.get("id") or "")
    serving = str(release.get("active_id", "") or "")
    known_good_after = str(release.get("known_good_id", "") or "")
    known_good_before = str(switch.get("known_good", known_good_after) or "")
    served_before = str(switch.get("active", "") or "")
    switches = bool(switch) and str(switch.get("switches", False)).lower() == "true"
    decision = str(verdict.get("decision", "") or "")
    phase = str(verdict.get("phase", "") or "")
    reason = _reason(failure)
    restored = serving != candidate and serving == known_good_after and bool(serving)
    # The switch happened when the candidate serves, or served last (a failed load's recovery publishes that).
    switched_to = switches and candidate in (serving, str(release.get("previous_active_id", "") or ""))

    if check_mode:
        headline = "check mode: nothing changed" + (f"; it stopped at {failure.get('task')}" if failure else "")
    elif decision == "keep":
        headline = f"nothing to prove: {candidate} is known-good and passed this gate before"
    elif decision == "promote" and known_good_after == candidate:
        headline = (f"promoted by policy: the gate stayed inconclusive for {candidate} "
                    "(spec_gate_inconclusive_policy: promote); it serves and is known-good"
                    if phase == "Inconclusive" else
                    f"promoted: {candidate} passed the gate; it serves and is known-good")  # fmt: skip
    elif decision == "promote":
        headline = (f"passed the gate: {candidate} serves; it becomes known-good once its bake passes" if not failure
                    else f"passed the gate, then failed: {candidate}; {serving or 'nothing'} serves")  # fmt: skip
    elif decision == "rollback":
        why = ("the gate stayed inconclusive (spec_gate_inconclusive_policy: keep_known_good)"
               if phase == "Inconclusive" else "it failed the gate")  # fmt: skip
        if candidate == known_good_before:
            headline = f"known-good {candidate} did not pass its re-gate ({why}); it keeps serving, nothing to restore"
        elif restored:
            headline = f"rolled back: {candidate} was not promoted, {why}; known-good {serving} serves again"
        elif not known_good_after:
            headline = f"{candidate} was not promoted, {why}; no known-good release exists to restore: it still serves"
        else:
            headline = f"{candidate} was not promoted, {why}, and restoring known-good did not finish: {serving} serves"
    elif failure and switched_to and serving == candidate:
        headline = (f"stopped after the switch, before a verdict: {candidate} serves unproven "
                    "(the next run settles it first, spec_gate_unsettled_policy)")  # fmt: skip
    elif failure and switched_to:
        headline = (f"rolled back: {candidate} did not come up; {serving} serves again" if serving
                    else f"{candidate} did not come up, and nothing serves")  # fmt: skip
    elif failure:
        headline = "stopped before the switch: what serves did not change"
    elif switched_to:
        headline = f"switched to {candidate} without a gate (the spec_gate stage did not run): it serves unproven"
    else:
        headline = "done: the release did not change" + ("" if verdict else " (the gate did not run)")

    if check_mode or not switch:
        switched = "no"
    elif not switches:
        switched = f"no ({candidate} already served)"
    elif not switched_to:
        switched = "no (stopped before the switch)"
    elif serving == candidate:
        switched = f"yes, from {served_before or 'nothing'}"
    else:
        switched = f"yes, from {served_before or 'nothing'}; back to {serving or 'nothing'}"

    verdict_line = f"{phase} -> {decision}" if verdict else "none (the gate did not run)"
    return {
        "headline": headline,
        "release": candidate or "(none rendered)",
        "switched": switched,
        "serving": serving or "?",
        "known_good": _known_good_line(known_good_before, known_good_after),
        "verdict": verdict_line,
        "reason": reason,
    }


def sweep_outcome(
    sweep: Mapping[str, Any] | None,
    release: Mapping[str, Any] | None,
    failure: Mapping[str, Any] | None,
    check_mode: bool = False,
) -> dict[str, str]:
    """The head of sweep.yml's block for one host: ``headline``, ``serving``, ``known_good`` (against the
    known-good release the sweep found, ``specgate_sweep.known_good_before``) and ``reason``."""
    sweep, release, failure = sweep or {}, release or {}, failure or {}
    serving = str(release.get("active_id", "") or "")
    known_good_after = str(release.get("known_good_id", "") or "")
    known_good_before = str(sweep.get("known_good_before", known_good_after) or "")
    finished = "winners" in sweep
    if check_mode:
        headline = "check mode: nothing changed"
    elif not sweep:
        headline = "the sweep stopped before its first point" if failure else "the sweep did not run"
    elif finished:
        failed = list(sweep.get("failed") or [])
        skipped = list(sweep.get("skipped") or [])
        headline = (f"sweep {sweep.get('id')}: {sweep.get('ran')} of {sweep.get('configs')} config(s) measured"
                    + (f", failed: {', '.join(failed)}" if failed else "")
                    + (f", skipped (refused before launch): {', '.join(skipped)}" if skipped else ""))  # fmt: skip
    else:
        headline = f"sweep {sweep.get('id')} stopped before its report: a re-run of the same id resumes it"
    if not serving:
        where = "nothing"
    elif serving == known_good_after:
        where = f"{serving} (known-good)"
    elif finished and str(sweep.get("restored", True)).lower() == "false":
        where = f"{serving} (the last point: spec_sweep_restore is off)"
    else:
        where = f"{serving} (not known-good: a sweep point; the next run restores known-good first)"
    return {
        "headline": headline,
        "serving": where,
        "known_good": _known_good_line(known_good_before, known_good_after),
        "reason": _reason(failure),
    }
