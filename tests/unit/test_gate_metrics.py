"""From benchmark runs and threshold vars to the gate's conditions; bad vars name themselves."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.gate_metrics import Cell, build_conditions

pytestmark = pytest.mark.host

CELL = {"set": "chat", "context": "short", "concurrency": 1}


def run(accept=4.0, server=3.9, pass_rate=0.9, tok_s=150.0, set_name="code"):
    return {
        "cells": [
            {"set": "chat", "context": "short", "concurrency": 1, "output_tok_s": tok_s, "request_per_s": 1.0},
            {"set": "chat", "context": "short", "concurrency": 16, "output_tok_s": tok_s * 5, "request_per_s": 5.0},
        ],
        "sets": {set_name: {"accept_length_request": accept, "accept_length_server": server}},
        "eval": {"problems": 24, "passed": round(pass_rate * 24), "pass_rate": pass_rate},
    }


def test_acceptance_and_correctness_take_one_measurement_per_run():
    conds, skipped = build_conditions(
        [run(accept=4.0), run(accept=4.2)], dict(min_accept_length=3.0, min_correctness=0.8), None, None
    )
    by = {c.name: c for c in conds}
    assert by["accept_length"].values == (4.0, 4.2)
    assert by["accept_length"].variable == "spec_gate_min_accept_length"
    assert by["correctness"].values == (0.9, 0.9)
    assert skipped == []


def test_server_side_acceptance_can_be_gated_instead():
    conds, _ = build_conditions([run()], dict(min_accept_length=3.0, accept_length_source="server"), None, None)
    assert conds[0].values == (3.9,)


def test_speedup_is_the_ratio_to_the_baselines_mean_on_the_named_cell():
    baseline = [run(tok_s=100.0), run(tok_s=50.0)]
    conds, _ = build_conditions([run(tok_s=150.0)], dict(min_speedup=1.5, speedup_cell=CELL), baseline, None)
    assert conds[0].name == "speedup"
    assert conds[0].values == (pytest.approx(2.0),)


def test_regression_compares_two_samples_with_threshold_one_minus_allowed_drop():
    t = dict(max_regression=0.05, regression_cell={"set": "chat", "context": "short", "concurrency": 16})
    conds, _ = build_conditions([run(tok_s=90.0)], t, None, [run(tok_s=100.0), run(tok_s=110.0)], "kg measured now")
    assert conds[0].threshold == pytest.approx(0.95)
    # The candidate's and known-good's own numbers on the cell, both kept: the gate judges their ratio with the
    # noise of both samples, not each candidate run against a fixed mean.
    assert conds[0].values == (450.0,)
    assert conds[0].reference == (500.0, 550.0)
    assert conds[0].reference_label == "kg measured now"
    assert conds[0].fail_only_beyond_noise


def test_missing_baseline_or_known_good_skips_those_conditions_with_a_reason():
    t = dict(min_speedup=1.2, speedup_cell=CELL, max_regression=0.1, regression_cell=CELL)
    conds, skipped = build_conditions([run()], t, None, None)
    assert conds == []
    assert {s["name"] for s in skipped} == {"speedup", "regression"}
    assert "spec_gate_bench_store_baseline" in skipped[0]["reason"]


def test_a_cell_outside_the_matrix_names_the_variable_and_the_cells_run():
    t = dict(max_regression=0.1, regression_cell={"set": "chat", "context": "long", "concurrency": 1})
    with pytest.raises(ValueError, match="spec_gate_regression_cell") as err:
        build_conditions([run()], t, None, [run()])
    assert "chat/short/C=1" in str(err.value)


def test_gating_a_set_that_did_not_run_names_the_variable():
    with pytest.raises(ValueError, match="spec_gate_accept_length_set is 'math'"):
        build_conditions([run()], dict(min_accept_length=3.0, accept_length_set="math"), None, None)


def test_acceptance_gate_on_a_release_without_speculation_says_so():
    with pytest.raises(ValueError, match="is speculative decoding enabled"):
        build_conditions([run(accept=None)], dict(min_accept_length=3.0), None, None)


def test_correctness_gate_without_an_eval_says_how_to_enable_it():
    no_eval = run()
    no_eval["eval"] = None
    with pytest.raises(ValueError, match="spec_gate_bench_eval: true"):
        build_conditions([no_eval], dict(min_correctness=0.8), None, None)


def test_cell_var_missing_keys_is_explained():
    with pytest.raises(ValueError, match="missing: concurrency"):
        Cell.from_mapping({"set": "chat", "context": "short"}, "spec_gate_speedup_cell")


def test_speedup_without_a_cell_is_refused():
    with pytest.raises(ValueError, match="spec_gate_speedup_cell must name"):
        build_conditions([run()], dict(min_speedup=1.2), [run()], None)
