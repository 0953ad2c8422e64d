"""Cell and prompt-set numbers from request records: throughput, latencies, acceptance, token accounting."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.bench_cells import server_accept_length, summarize_cell, summarize_sets
from ansible.module_utils.specgate.gate.bench_client import RequestRecord

pytestmark = pytest.mark.host


def rec(*, tokens=100, verify=25, ttft=0.1, latency=1.1, requested=100, prompt=500, itl=(0.01, 0.01)):
    return RequestRecord(
        requested_tokens=requested,
        ok=True,
        prompt_tokens=prompt,
        completion_tokens=tokens,
        verify_ct=verify,
        ttft=ttft,
        latency=latency,
        itl=list(itl),
        finish_reason="length",
    )


def test_throughput_divides_by_the_cells_wall_time():
    cell = summarize_cell([rec(), rec()], duration_s=2.0, server_accept_length=None, server_tokens=None)
    assert cell["output_tok_s"] == pytest.approx(100.0)
    assert cell["request_per_s"] == pytest.approx(1.0)


def test_acceptance_is_token_weighted_over_verify_steps_not_a_mean_of_ratios():
    cell = summarize_cell([rec(tokens=100, verify=20), rec(tokens=10, verify=10)], 1.0, 4.5, None)
    assert cell["accept_length_request"] == pytest.approx(110 / 30)
    assert cell["accept_length_server"] == 4.5
    assert cell["verify_steps"] == 30


def test_no_speculation_means_no_acceptance_rather_than_one():
    cell = summarize_cell([rec(verify=None)], 1.0, None, None)
    assert cell["accept_length_request"] is None


def test_failed_requests_are_counted_and_excluded_from_the_numbers():
    bad = RequestRecord(requested_tokens=100, error="HTTP 500: boom")
    cell = summarize_cell([rec(), bad], 1.0, None, None)
    assert (cell["completed"], cell["failed"], cell["errors"]) == (1, 1, ["HTTP 500: boom"])
    assert cell["output_tokens"] == 100


def test_tokens_received_vs_requested_flags_short_answers():
    cell = summarize_cell([rec(tokens=60, requested=100), rec()], 1.0, None, server_tokens=160.0)
    t = cell["tokens"]
    assert (t["output_requested"], t["output_received"], t["short_requests"]) == (200, 160, 1)
    assert t["server_counted"] == 160.0
    assert t["prompt_mean_received"] == 500


def test_latency_percentiles_are_in_milliseconds():
    cell = summarize_cell([rec(ttft=0.2), rec(ttft=0.4)], 1.0, None, None)
    assert cell["ttft"]["p50_ms"] == pytest.approx(300.0)
    assert cell["itl"]["p99_ms"] == pytest.approx(10.0)
    assert cell["tpot"]["p50_ms"] == pytest.approx((1.1 - 0.3) / 99 * 1000, rel=0.2)


def test_set_acceptance_weights_cells_by_their_steps_and_tokens():
    cells = [
        {
            "set": "code",
            "verify_steps": 10,
            "accept_length_request": 5.0,
            "accept_length_server": 5.0,
            "output_tokens": 50,
        },
        {
            "set": "code",
            "verify_steps": 30,
            "accept_length_request": 3.0,
            "accept_length_server": 3.0,
            "output_tokens": 90,
        },
        {
            "set": "chat",
            "verify_steps": 0,
            "accept_length_request": None,
            "accept_length_server": None,
            "output_tokens": 9,
        },
    ]
    sets = summarize_sets(cells)
    assert sets["code"]["accept_length_request"] == pytest.approx(140 / 40)
    assert sets["code"]["accept_length_server"] == pytest.approx((5 * 50 + 3 * 90) / 140)
    assert sets["chat"] == {"output_tokens": 9, "accept_length_request": None, "accept_length_server": None}


def test_server_acceptance_averages_data_parallel_schedulers_and_ignores_missing():
    info = {"internal_states": [{"avg_spec_accept_length": 4.0}, {"avg_spec_accept_length": 5.0}, {"other": 1}]}
    assert server_accept_length(info) == pytest.approx(4.5)
    assert server_accept_length({"internal_states": [{}]}) is None
    assert server_accept_length({}) is None
