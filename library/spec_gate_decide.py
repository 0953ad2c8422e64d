#!/usr/bin/python
"""Ansible module: judge benchmark runs against the gate's thresholds (pure; changes nothing)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.gate.bench_report import gate_markdown
from ansible.module_utils.specgate.gate.gate_decision import (
    ACTION_PROMOTE,
    INCONCLUSIVE_POLICIES,
    action_for,
    analyze,
    failure_paragraph,
    needs_more_runs,
)
from ansible.module_utils.specgate.gate.gate_metrics import build_conditions, thresholds_of

REFERENCE_SOURCES = ("measured_now", "stored")

DOCUMENTATION = r"""
---
module: spec_gate_decide
short_description: Decide whether a candidate release passes the speculative-decoding gate
description:
  - Judges the candidate's benchmark runs (schema C(specgate.bench/v1)) the way metric-gated progressive delivery
    (Argo Rollouts analysis) does. Each gated metric has a success condition and one measurement per run; its
    phase is C(Successful) when the whole confidence interval of the mean meets the threshold, C(Failed) when the
    whole interval misses it or more measurements failed than I(failure_limit), else C(Inconclusive).
  - The analysis is C(Failed) if any metric failed, else C(Inconclusive) if any is, else C(Successful).
    C(more_runs) says whether another run may still settle an inconclusive analysis.
  - Pure computation; supports check mode and never changes anything.
version_added: "0.1.0"
author: specgate
options:
  runs:
    description: The candidate's benchmark runs (C(result.runs) of M(spec_bench)), one measurement per metric each.
    type: list
    elements: dict
    required: true
  release:
    description: Id of the candidate release (for the verdict text).
    type: str
    required: true
  known_good_release:
    description:
      - Id of the known-good release, restored on failure; empty when none exists.
      - Equal to I(release) when the known-good release itself is re-gated; a failure then restores nothing.
    type: str
    default: ""
  known_good_runs:
    description:
      - Runs of the known-good release on I(regression_cell), the reference for I(max_regression).
      - The candidate and these runs are two samples; the ratio of their means is judged through an interval
        from both samples' noise.
    type: list
    elements: dict
    default: []
  known_good_source:
    description:
      - Where I(known_good_runs) come from, said in the gate result.
      - C(measured_now) - the known-good release benchmarked in this deploy right before the switch, under the
        candidate's conditions; C(stored) - the runs stored with its own gate result (another time, other load).
    type: str
    choices: [measured_now, stored]
    default: stored
  known_good_measured_at:
    description: When I(known_good_runs) were measured (ISO 8601), for the gate result.
    type: str
    default: ""
  baseline_runs:
    description: Benchmark runs of a no-speculation release of the same host and target, for I(min_speedup).
    type: list
    elements: dict
    default: []
  thresholds:
    description:
      - The gate's settings by short name or by their spec_gate_ variable, one per metric of the gate's registry
        (module_utils/specgate/gate/gate_metrics.py GATE_METRICS) and the settings each reads -
        min_accept_length (with accept_length_set, accept_length_source), min_correctness, min_speedup (with
        speedup_cell), max_regression (with regression_metric, regression_cell), and failure_limit.
      - A null threshold skips its metric; a missing setting takes its default. Numbers may come as text.
    type: dict
    default: {}
  confidence:
    description: Confidence level of the intervals.
    type: float
    default: 0.95
  max_runs:
    description:
      - Most runs the gate may take before an inconclusive analysis is final.
      - Once I(runs) reach it, a regression still inconclusive (its interval straddles C(1 - max_regression))
        whose interval holds 1 (no change) is Successful - no slowdown beyond the measured noise; wholly below 1,
        and for every other metric, the analysis stays Inconclusive and I(inconclusive_policy) decides.
    type: int
    default: 5
  inconclusive_policy:
    description: What a final C(Inconclusive) does - C(keep_known_good) rolls back, C(promote) promotes.
    type: str
    choices: [keep_known_good, promote]
    default: keep_known_good
"""

EXAMPLES = r"""
- name: Judge the candidate's runs against the thresholds
  spec_gate_decide:
    runs: "{{ _spec_gate_runs }}"
    release: "{{ specgate_release.id }}"
    known_good_release: "{{ specgate_release.known_good_id | default('', true) }}"
    thresholds:
      min_accept_length: 3.0
      accept_length_set: code
      min_correctness: 0.9
    max_runs: 5
  register: __spec_gate_decision
"""

RETURN = r"""
phase:
  description: C(Successful), C(Failed) or C(Inconclusive).
  returned: always
  type: str
more_runs:
  description: True while the analysis is inconclusive and fewer than I(max_runs) runs were taken.
  returned: always
  type: bool
decision:
  description: C(promote) or C(rollback) - what the role does once no more runs are taken.
  returned: always
  type: str
message:
  description:
    - One paragraph naming each metric that did not succeed, its threshold and measured value.
    - Empty on success.
  returned: always
  type: str
gate:
  description: The gate result to store (release, analysis, action, message, thresholds, runs).
  returned: always
  type: dict
markdown:
  description: The gate table.
  returned: always
  type: str
"""


ARGUMENT_SPEC = {
    "runs": {"type": "list", "elements": "dict", "required": True},
    "release": {"type": "str", "required": True},
    "known_good_release": {"type": "str", "default": ""},
    "known_good_runs": {"type": "list", "elements": "dict", "default": []},
    "known_good_source": {"type": "str", "choices": list(REFERENCE_SOURCES), "default": "stored"},
    "known_good_measured_at": {"type": "str", "default": ""},
    "baseline_runs": {"type": "list", "elements": "dict", "default": []},
    "thresholds": {"type": "dict", "default": {}},
    "confidence": {"type": "float", "default": 0.95},
    "max_runs": {"type": "int", "default": 5},
    "inconclusive_policy": {"type": "str", "choices": list(INCONCLUSIVE_POLICIES), "default": "keep_known_good"},
}


def regression_reference(p: dict) -> dict | None:
    """What the regression metric was compared with, for the gate result and its table."""
    if thresholds_of(p["thresholds"])["max_regression"] is None or not p["known_good_runs"]:
        return None
    release = p["known_good_release"] or "known-good"
    now = p["known_good_source"] == "measured_now"
    label = f"known-good {release} measured now" if now else f"known-good {release}'s stored gate runs"
    note = (
        "measured in this deploy right before the switch, on the same host under the candidate's conditions"
        if now
        else "no same-run measurement (the known-good release was not serving before the switch): the runs stored "
        "with its gate result, measured at another time under other load"
    )
    return {
        "source": p["known_good_source"],
        "release": p["known_good_release"] or None,
        "measured_at": p["known_good_measured_at"] or None,
        "label": label,
        "note": note,
        "runs": p["known_good_runs"],
    }


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    reference = regression_reference(p)
    try:
        conditions, skipped = build_conditions(
            p["runs"],
            p["thresholds"],
            p["baseline_runs"] or None,
            p["known_good_runs"] or None,
            reference["label"] if reference else "known-good runs",
        )
        analysis = analyze(conditions, p["confidence"], skipped, final=len(p["runs"]) >= p["max_runs"])
        action = action_for(analysis.phase, p["inconclusive_policy"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    more = needs_more_runs(analysis, len(p["runs"]), p["max_runs"])
    message = "" if action == ACTION_PROMOTE else failure_paragraph(analysis, p["release"], p["known_good_release"])
    gate = {
        "schema": "specgate.gate/v1",
        "release": p["release"],
        "known_good_release": p["known_good_release"] or None,
        "analysis": analysis.as_dict(),
        "action": action,
        "message": message,
        # The settings the verdict was judged with, by short name, as a settled release is compared on them.
        "thresholds": {**thresholds_of(p["thresholds"]), "confidence": p["confidence"], "max_runs": p["max_runs"],
                       "inconclusive_policy": p["inconclusive_policy"]},
        "runs": p["runs"],
    }
    if reference:
        gate["regression_reference"] = reference
    module.exit_json(
        changed=False,
        phase=analysis.phase,
        more_runs=more,
        decision=action,
        message=message,
        gate=gate,
        markdown=gate_markdown(gate),
    )


if __name__ == "__main__":
    main()
