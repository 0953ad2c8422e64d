"""The benchmark client's per-chunk shortcut (parse only meta_info) and the server-side acceptance of a cell."""

from __future__ import annotations

import json
import random

import pytest
from ansible.module_utils.specgate.gate import bench_client
from ansible.module_utils.specgate.gate.bench_cells import server_acceptance
from ansible.module_utils.specgate.gate.bench_client import (
    GENERATION_TOKENS,
    SPEC_VERIFY_CALLS,
    chunk_meta,
    event_completion_tokens,
)

pytestmark = pytest.mark.host

# text that looks like the keys the shortcuts search for, and JSON's own punctuation and escapes
TRICKY = [
    '"meta_info": {"completion_tokens": 999}}',
    '"completion_tokens":7',
    "completion_tokens",
    *("}", "{", "\\", '\\"', "\n", "é", "✓", '"', ",", "]"),
]


def _meta(n: int) -> dict:
    return {
        "id": "a1",
        "finish_reason": {"type": "length", "length": n} if n == 64 else None,
        "prompt_tokens": 512,
        "completion_tokens": n,
        "spec_verify_ct": n // 4,
        "spec_correct_drafts_histogram": [1, 2, 3],
    }


def _event(text: str, n: int, *, compact: bool) -> bytes:
    # SGLang writes orjson's compact form; the sim writes json.dumps's spaced form
    chunk = {"text": text, "output_ids": list(range(n)), "meta_info": _meta(n)}
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(chunk, separators=separators, ensure_ascii=compact).encode()


@pytest.fixture(params=["orjson-or-stdlib", "stdlib"])
def parser(request, monkeypatch):
    # the host venv decides which loads the client uses; the stdlib path must hold on its own
    if request.param == "stdlib":
        monkeypatch.setattr(bench_client, "_loads", json.loads)


@pytest.mark.parametrize("compact", [True, False])
def test_only_meta_info_is_parsed_and_it_equals_the_whole_events(parser, compact):
    rng = random.Random(7)
    for n in range(1, 65):
        text = "".join(rng.choice([*TRICKY, "word ", "x"]) for _ in range(n))
        data = _event(text, n, compact=compact)
        assert chunk_meta(data) == json.loads(data)["meta_info"] == _meta(n)
        assert event_completion_tokens(data) == n  # read without parsing, text notwithstanding


def test_events_without_a_plain_token_count_are_left_to_the_parse():
    assert event_completion_tokens(b'{"error": {"message": "boom"}}') is None
    assert event_completion_tokens(b'{"text": "t", "meta_info": {"completion_tokens": null}}') is None
    assert event_completion_tokens(b'{"text": "t", "meta_info": {"completion_tokens":') is None
    assert event_completion_tokens(b"{not json") is None


def test_events_of_another_shape_are_left_to_the_whole_parse(parser):
    assert chunk_meta(b'{"error": {"message": "boom"}}') is None
    assert chunk_meta(b'{"text": "t", "meta_info": {"completion_tokens": 1}, "extra": 1}') is None
    assert chunk_meta(b'{"text": "t", "meta_info": {"completion_tokens": 1') is None  # cut short
    assert chunk_meta(b'{"text": "t", "meta_info": [1, 2]}') is None
    assert chunk_meta(b"{not json") is None


def test_server_acceptance_comes_from_the_servers_counters_without_lag():
    before = {GENERATION_TOKENS: 1000.0, SPEC_VERIFY_CALLS: 200.0}
    after = {GENERATION_TOKENS: 1384.0, SPEC_VERIFY_CALLS: 280.0}
    # /server_info's figure lags (whole decode_log_interval windows only): it is kept beside, not used
    info = {"decode_log_interval": 40, "internal_states": [{"avg_spec_accept_length": 4.2}]}
    got = server_acceptance(info, before, after)
    assert got == {
        "accept_length_server": pytest.approx(384 / 80),
        "accept_length_server_source": "metrics",
        "accept_length_server_info": pytest.approx(4.2),
        "server_decode_log_interval": 40,
    }


def test_without_metrics_the_lagging_server_info_figure_is_used_and_may_be_absent():
    info = {"decode_log_interval": 40, "internal_states": [{"avg_spec_accept_length": 4.2}]}
    got = server_acceptance(info, None, None)
    assert (got["accept_length_server"], got["accept_length_server_source"]) == (pytest.approx(4.2), "server_info")
    # fewer decode batches than one interval since the flush: SGLang has not folded anything in yet
    empty = server_acceptance({"decode_log_interval": 40, "internal_states": [{}]}, None, None)
    assert (empty["accept_length_server"], empty["accept_length_server_source"]) == (None, None)
    # a non-speculative server: tokens counted, no verify calls
    flat = server_acceptance({"internal_states": [{}]}, {GENERATION_TOKENS: 0.0}, {GENERATION_TOKENS: 50.0})
    assert flat["accept_length_server"] is None


def test_a_counter_that_first_appears_during_the_cell_started_at_zero():
    # prometheus_client shows a labelled counter only once it has counted: a fresh server has no verify calls yet
    got = server_acceptance({}, {GENERATION_TOKENS: 5.0}, {GENERATION_TOKENS: 105.0, SPEC_VERIFY_CALLS: 25.0})
    assert (got["accept_length_server"], got["accept_length_server_source"]) == (pytest.approx(4.0), "metrics")
