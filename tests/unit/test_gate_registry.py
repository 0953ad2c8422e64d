"""The gate's metric registry (gate_metrics.GATE_METRICS): one entry per metric drives the range check, the
decision, and whether a stored verdict was judged with the same thresholds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.gate import gate_metrics
from ansible.module_utils.specgate.gate.gate_decision import Condition
from ansible.module_utils.specgate.gate.gate_metrics import (
    GATE_METRICS,
    VARIABLE_PREFIX,
    GateMetric,
    build_conditions,
    same_thresholds,
    threshold_keys,
    threshold_refusal,
    thresholds_of,
)

pytestmark = pytest.mark.host

ROLE = Path(__file__).resolve().parents[2] / "roles" / "spec_gate"

RUN = {"cells": [{"set": "chat", "context": "short", "concurrency": 1, "output_tok_s": 100.0, "request_per_s": 1.0}],
       "sets": {"code": {"accept_length_request": 4.0, "accept_length_server": 3.9}},
       "eval": {"problems": 10, "passed": 9, "pass_rate": 0.9}}  # fmt: skip


def test_every_setting_the_registry_reads_is_declared_by_the_role():
    """The registry names variables; the role must declare each (argument_specs and defaults), or a metric could
    read a name no user can set."""
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    for metric in GATE_METRICS:
        assert metric.variable in specs, metric.variable
        assert metric.variable in defaults, metric.variable
        for key in metric.settings:
            assert VARIABLE_PREFIX + key in specs, key
            assert VARIABLE_PREFIX + key in defaults, key
    assert set(threshold_keys()) == {m.threshold for m in GATE_METRICS} | {
        key for m in GATE_METRICS for key in m.settings} | {"failure_limit"}


def test_settings_are_read_by_variable_name_with_text_from_the_command_line():
    values = thresholds_of({"spec_gate_max_regression": "0.2", "spec_gate_min_accept_length": "3.5",
                            "spec_gate_bench_sets": ["code"]})  # fmt: skip
    assert values["max_regression"] == "0.2"
    assert values["min_accept_length"] == "3.5"
    assert values["accept_length_set"] is None  # not given: the metric's own fallback (code)
    assert values["min_correctness"] is None  # off
    assert "bench_sets" not in values
    assert threshold_refusal({"spec_gate_max_regression": "0.2", "spec_gate_min_accept_length": "3.5"}) == ""


@pytest.mark.parametrize(
    ("settings", "refusal"),
    [
        ({"spec_gate_max_regression": 1.5},
         "spec_gate_max_regression is 1.5: it must be null or a number >= 0 and < 1"),
        ({"spec_gate_min_accept_length": "abc"}, "spec_gate_min_accept_length is 'abc' (not a number)"),
        ({"spec_gate_min_correctness": 2}, "spec_gate_min_correctness is 2: it must be null or a number >= 0"),
        ({"spec_gate_failure_limit": 1.9}, "spec_gate_failure_limit is 1.9: it must be null or a whole number"),
    ],
)
def test_a_threshold_out_of_range_is_refused_alone(settings, refusal):
    message = threshold_refusal(settings)
    assert message.startswith(refusal)
    assert message.count("spec_gate_") == 1


def test_a_stored_verdict_is_settled_only_under_the_same_thresholds():
    now = {"spec_gate_min_accept_length": 3, "spec_gate_max_regression": "0.1",
           "spec_gate_regression_cell": {"set": "chat", "context": "short", "concurrency": 1}}  # fmt: skip
    stored = thresholds_of(now) | {"max_regression": 0.1, "min_accept_length": 3.0}  # as gate.json holds them
    assert same_thresholds(stored, now)
    assert not same_thresholds(stored, {**now, "spec_gate_min_accept_length": 3.2})
    assert not same_thresholds(stored, {**now, "spec_gate_regression_cell": {"set": "chat", "context": "long",
                                                                               "concurrency": 1}})  # fmt: skip
    assert not same_thresholds(None, now)
    assert not same_thresholds({}, now)


def test_a_metric_added_to_the_registry_is_validated_decided_and_compared(monkeypatch):
    """Adding a metric is one entry: its range check, its condition and the settled comparison follow from it."""
    def throughput(runs, settings, _refs):
        return Condition(name="throughput", description="Requests per second (set chat)",
                         threshold=float(settings["min_request_rate"]),
                         values=tuple(r["cells"][0]["request_per_s"] for r in runs),
                         variable="spec_gate_min_request_rate")  # fmt: skip

    added = GateMetric(name="throughput", threshold="min_request_rate", unit="requests/s",
                       range={"above": 0, "null": True, "example": 2}, condition=throughput)  # fmt: skip
    monkeypatch.setattr(gate_metrics, "GATE_METRICS", (*GATE_METRICS, added))
    assert "min_request_rate" in threshold_keys()
    assert threshold_refusal({"spec_gate_min_request_rate": -1}).startswith("spec_gate_min_request_rate is -1")
    conditions, _ = build_conditions([RUN], {"spec_gate_min_request_rate": "0.5"})
    assert [(c.name, c.values) for c in conditions] == [("throughput", (1.0,))]
    stored = thresholds_of({"spec_gate_min_request_rate": 0.5})
    assert same_thresholds(stored, {"spec_gate_min_request_rate": "0.5"})
    assert not same_thresholds(stored, {"spec_gate_min_request_rate": 2})
