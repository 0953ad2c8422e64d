"""GET /v1/loads as SGLang 0.5.23 serves it (srt/entrypoints/v1_loads.py, srt/managers/load_snapshot.py), and a
/metrics exposition that agrees with it and carries SGLang's # HELP / # TYPE lines: a real sim process on loopback."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from specgate_sim import testing

# sglang 0.5.23 srt/managers/load_snapshot.py::LoadSnapshot: the flat fields to_dict returns under "core", in order
CORE = [
    "timestamp",
    "dp_rank",
    "num_running_reqs",
    "num_waiting_reqs",
    "num_waiting_uncached_tokens",
    "num_used_tokens",
    "num_total_tokens",
    "num_active_tokens",
    "num_prealloc_ready_tokens",
    "max_total_num_tokens",
    "max_running_requests",
    "token_usage",
    "gen_throughput",
    "cache_hit_rate",
    "utilization",
    "total_prefill_uncached_tokens",
    "total_prefill_busy_us",
    "decode_moments",
]
DISAGG_NULL = {
    "mode": "null",
    "prefill_bootstrap_queue_reqs": 0,
    "prefill_inflight_queue_reqs": 0,
    "decode_prealloc_queue_reqs": 0,
    "decode_transfer_queue_reqs": 0,
    "decode_retracted_queue_reqs": 0,
    "kv_transfer_speed_gb_s": 0.0,
    "kv_transfer_latency_ms": 0.0,
}
# srt/observability/metrics_collector.py documentation strings (the # HELP text of each family)
HELP = {
    "sglang:num_running_reqs": "The number of running requests.",
    "sglang:num_queue_reqs": "The number of requests in the waiting queue.",
    "sglang:gen_throughput": "The generation throughput (token/s).",
    "sglang:token_usage": "The token usage.",
    "sglang:spec_accept_length": "Mean acceptance length of speculative decoding (accepted drafts + bonus token per "
    "forward).",
    "sglang:spec_accept_rate": "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
    "sglang:spec_num_draft_tokens": "Currently active speculative_num_draft_tokens (decouples from steps under "
    "topk>1).",
    "sglang:prompt_tokens": "Number of prefill tokens processed.",
    "sglang:generation_tokens": "Number of generation tokens processed.",
    "sglang:num_requests": "Number of requests processed.",
    "sglang:spec_verify_calls": "Number of speculative decoding verification calls.",
    "sglang:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "sglang:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "sglang:e2e_request_latency_seconds": "Histogram of End-to-end request latency in seconds",
    "sglang:get_loads_duration_seconds": "Time spent serving /v1/loads requests (seconds).",
}
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}
TIME_SCALE = 0.2  # slow enough that a request is still in flight when /v1/loads is polled
SLOW_STEPS_SCALE = 1.0


def _start(tmp_path_factory: pytest.TempPathFactory, time_scale: float) -> testing.SimProcess:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG, weight_bytes=4 << 20)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)
    args = f"--model-path {target} --served-model-name kimi-k2.6 --speculative-algorithm DFLASH"
    args += f" --speculative-draft-model-path {drafter} --max-running-requests 2 --enable-metrics"
    proc = testing.start(
        args.split(),
        log_path=tmp_path_factory.mktemp("log") / "sim.log",
        env={"SPECGATE_SIM_SEED": "3"},
        time_scale=time_scale,
    )
    try:
        proc.wait_ready(timeout=30)
    except BaseException:
        proc.stop()
        raise
    return proc


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    proc = _start(tmp_path_factory, TIME_SCALE)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def slow_steps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    """A sim whose decode steps take SLOW_STEPS_SCALE / TIME_SCALE times longer: it publishes its load snapshot (every
    15 steps) that much less often, so three HTTP reads on a machine at load 8 still fit between two publishes."""
    proc = _start(tmp_path_factory, SLOW_STEPS_SCALE)
    try:
        yield proc
    finally:
        proc.stop()


def _loads(sim: testing.SimProcess, query: str = "") -> httpx.Response:
    return httpx.get(sim.url + "/v1/loads" + query, timeout=10)


def _gauges(sim: testing.SimProcess) -> tuple[float, float]:
    families = {f.name: f for f in text_string_to_metric_families(httpx.get(sim.url + "/metrics", timeout=10).text)}
    (running,) = families["sglang:num_running_reqs"].samples
    (queued,) = families["sglang:num_queue_reqs"].samples
    return running.value, queued.value


def _generate(sim: testing.SimProcess, tokens: int, tag: str) -> None:
    params = {"max_new_tokens": tokens, "ignore_eos": True}
    body = {"text": f"Tell me about spring, part {tag}.", "sampling_params": params}
    httpx.post(sim.url + "/generate", json=body, timeout=60).raise_for_status()


@pytest.fixture(scope="module")
def served(sim: testing.SimProcess) -> testing.SimProcess:
    """The sim after one request long enough that the speculative counters were folded (40 decode batches)."""
    _generate(sim, 400, "warm-up")
    return sim


def test_v1_loads_answers_sglangs_fields(served: testing.SimProcess) -> None:
    resp = _loads(served)
    assert resp.status_code == 200
    body = resp.json()
    assert list(body) == ["timestamp", "version", "accelerator", "num_accelerators", "loads"]
    assert datetime.fromisoformat(body["timestamp"]).utcoffset() is not None  # datetime.now(timezone.utc)
    assert (body["version"], body["num_accelerators"]) == ("0.5.23", 1)
    assert body["accelerator"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"  # the ct200 profile's cards
    (load,) = body["loads"]
    assert list(load) == [*CORE, "speculative", "disaggregation", "queues"]  # memory, lora: absent (see loads.py)
    assert abs(load["timestamp"] - time.time()) < 60
    assert (load["dp_rank"], load["num_running_reqs"], load["num_waiting_reqs"]) == (0, 0, 0)
    assert (load["max_running_requests"], load["num_used_tokens"], load["token_usage"]) == (2, 0, 0.0)
    assert load["total_prefill_uncached_tokens"] > 0
    assert load["total_prefill_busy_us"] > 0
    count, batch, step_us, batch_sq, batch_step, generated = load["decode_moments"]
    assert count >= 40
    assert batch == batch_sq == count  # one request at a time
    assert batch_step == step_us > 0
    assert generated == 399  # the first token comes from the prefill
    assert load["disaggregation"] == DISAGG_NULL
    assert load["queues"] == {"waiting": 0, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}
    assert list(load["speculative"]) == ["accept_length", "accept_rate"]
    assert 0 < load["speculative"]["accept_rate"] < 1
    # the same lifetime counters /server_info's average reads (metrics_reporter.py spec_total_*)
    state = httpx.get(served.url + "/server_info").json()["internal_states"][0]
    assert load["speculative"]["accept_length"] == pytest.approx(state["avg_spec_accept_length"])


def test_v1_loads_include_picks_sections_and_an_unknown_one_is_a_500(served: testing.SimProcess) -> None:
    (core,) = _loads(served, "?include=core").json()["loads"]
    assert list(core) == CORE
    (some,) = _loads(served, "?include=%20spec%20,queues").json()["loads"]  # stripped, as SGLang splits it
    assert list(some) == [*CORE, "speculative", "queues"]
    (every,) = _loads(served, "?include=core,all").json()["loads"]
    assert list(every) == [*CORE, "speculative", "disaggregation", "queues"]
    # load_snapshot.py::to_dict raises ValueError outside v1_loads.py's try: starlette's plain 500 ...
    bad = _loads(served, "?include=core,bogus")
    assert (bad.status_code, bad.text) == (500, "Internal Server Error")
    # ... unless there is no load to render
    assert _loads(served, "?include=bogus&dp_rank=3").json()["loads"] == []


def test_v1_loads_dp_rank_filters_and_a_non_integer_is_sglangs_400(served: testing.SimProcess) -> None:
    assert [x["dp_rank"] for x in _loads(served, "?dp_rank=0").json()["loads"]] == [0]
    assert [x["dp_rank"] for x in _loads(served, "?dp_rank=%200%20").json()["loads"]] == [0]  # pydantic's lax int
    assert _loads(served, "?dp_rank=1").json()["loads"] == []
    assert _loads(served, "?dp_rank=-1").json()["loads"] == []
    bad = _loads(served, "?dp_rank=first")
    assert bad.status_code == 400
    body = bad.json()
    assert (body["object"], body["type"], body["code"]) == ("error", "Bad Request", 400)
    assert "int_parsing" in body["message"]
    assert "'loc': ('query', 'dp_rank')" in body["message"]


def test_v1_loads_prometheus_format_is_one_gauge_per_number(served: testing.SimProcess) -> None:
    resp = _loads(served, "?format=prometheus")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "# HELP" not in resp.text  # v1_loads.py::_format_loads_prometheus writes # TYPE lines only
    families = {f.name: f for f in text_string_to_metric_families(resp.text)}
    assert all(f.type == "gauge" for f in families.values())
    assert all(s.labels == {"dp_rank": "0"} for f in families.values() for s in f.samples)
    numeric_core = {f"sglang_{k}" for k in CORE if k not in ("dp_rank", "decode_moments")}
    assert numeric_core <= set(families)
    expected = {"sglang_spec_accept_length", "sglang_spec_accept_rate", "sglang_queues_waiting"}
    assert expected | {"sglang_disagg_kv_transfer_speed_gb_s"} <= set(families)
    assert "sglang_disagg_mode" not in families  # a string
    assert "sglang_decode_moments" not in families  # a list
    core_only = {f.name for f in text_string_to_metric_families(_loads(served, "?format=prometheus&include=core").text)}
    assert core_only == numeric_core


def test_metrics_has_help_and_type_for_every_family_and_no_created_samples(served: testing.SimProcess) -> None:
    _loads(served)  # observes sglang:get_loads_duration_seconds
    text = httpx.get(served.url + "/metrics").text
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert set(helps) == set(types)
    samples = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}
    for name in samples:
        assert not name.endswith("_created"), name  # MultiProcessCollector writes none
        owners = [f for f, t in types.items() if any(name == f.removesuffix("_total") + s for s in SUFFIXES[t])]
        assert owners, f"{name} has no # TYPE line"
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {name: f.documentation for name, f in families.items()} == HELP
    assert families["sglang:get_loads_duration_seconds"].type == "histogram"


@pytest.mark.slow
def test_v1_loads_and_metrics_agree_while_busy_and_both_fall_to_zero_once_drained(
    slow_steps: testing.SimProcess,
) -> None:
    served = slow_steps
    # three long requests on two slots: two run, one waits. Long enough (a few seconds of simulated decode) that the
    # window in which all three are in flight outlasts a slow start of the third on a machine at load 8.
    tokens = round(2000 * TIME_SCALE / SLOW_STEPS_SCALE)
    threads = [threading.Thread(target=_generate, args=(served, tokens, str(i))) for i in range(3)]
    for t in threads:
        t.start()
    seen: set[tuple[int, int]] = set()  # every snapshot read (each read is one consistent snapshot)
    compared = 0  # busy snapshots /metrics was read against
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and ((2, 1) not in seen or compared < 3):
            (before,) = _loads(served).json()["loads"]
            gauges = _gauges(served)
            (after,) = _loads(served).json()["loads"]
            for load in (before, after):
                seen.add((load["num_running_reqs"], load["num_waiting_reqs"]))
                assert load["queues"]["waiting"] == load["num_waiting_reqs"]
            # No snapshot published in between: /metrics read that one too. On a busy machine the three reads can
            # straddle a publish (every 15 decode steps) most of the time, so only these are compared.
            if before["timestamp"] == after["timestamp"]:
                pair = (before["num_running_reqs"], before["num_waiting_reqs"])
                assert gauges == pair
                if pair != (0, 0):
                    assert before["num_used_tokens"] > 0
                    compared += 1
        assert (2, 1) in seen, seen
        assert compared > 0, "no busy snapshot was read together with /metrics"
    finally:
        for t in threads:
            t.join(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (load,) = _loads(served).json()["loads"]
        if (load["num_running_reqs"], load["num_waiting_reqs"]) == (0, 0):
            break
        time.sleep(0.05)
    assert (load["num_running_reqs"], load["num_waiting_reqs"], load["num_total_tokens"]) == (0, 0, 0)
    assert _gauges(served) == (0, 0)


def test_v1_loads_answers_while_loading_with_the_empty_snapshot(tmp_path: Path) -> None:
    # the sim binds before the load (SGLang binds after it): the scheduler has published nothing yet, so /v1/loads
    # shows the zeroed slot ShmLoadSnapshotWriter writes at start (no sections)
    target = testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG)
    proc = testing.start(
        ["--model-path", str(target)],
        log_path=tmp_path / "sim.log",
        env={"SPECGATE_SIM_LOAD_SECONDS": "60000", "SPECGATE_SIM_START_SECONDS": "0"},  # a minute of wall time
    )
    try:
        proc.wait_status("/health", 503)
        (load,) = _loads(proc).json()["loads"]
        assert list(load) == CORE
        assert (load["timestamp"], load["num_running_reqs"], load["max_running_requests"]) == (0.0, 0, 0)
    finally:
        proc.stop()
