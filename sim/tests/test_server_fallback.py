"""Live acceptance from /metrics as a post-promotion bake reads it, SPECGATE_SIM_FALLBACK_FILE (SGLang's silent
fallback to plain decoding, sgl-project/sglang#34285) and sglang:num_aborted_requests_total: real sim processes on
loopback, /metrics parsed with prometheus_client's parser.

The counters are bumped once per finished request (sglang 0.5.23 srt/observability/metrics_collector.py
``observe_one_finished_request``), so over a window generation tokens / verify calls is the acceptance length of the
requests that finished in it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from specgate_sim import testing
from specgate_sim.engine import FALLBACK_POLL_SECONDS, Engine, Job
from specgate_sim.metrics import Metrics
from specgate_sim.specmodel import SpecConfig

CODE_PROMPT = "Write a Python function `fib(n)` that returns the n-th Fibonacci number. Return only the code."
MATH_PROMPT = "Solve the equation 3x + 7 = 22 step by step and give x."
LABELS = {"model_name": "kimi-k2.6", "engine_type": "unified"}


@dataclass(frozen=True)
class Scrape:
    tokens: dict[str, float]  # sglang:generation_tokens_total by is_streaming
    requests: dict[str, float]  # sglang:num_requests_total by is_streaming
    verify_calls: float
    aborted: float
    accept_gauge: float | None
    labels: dict[str, list[dict[str, str]]]  # the label sets of each counter family

    @property
    def total_tokens(self) -> float:
        return sum(self.tokens.values())

    @property
    def total_requests(self) -> float:
        return sum(self.requests.values())


def _scrape(sim: testing.SimProcess) -> Scrape:
    resp = httpx.get(sim.url + "/metrics", timeout=10)
    resp.raise_for_status()
    tokens: dict[str, float] = {}
    requests: dict[str, float] = {}
    verify = aborted = 0.0
    gauge = None
    labels: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            if family.type == "counter" and sample.name.endswith("_total"):
                labels.setdefault(family.name, []).append(dict(sample.labels))
            if sample.name == "sglang:generation_tokens_total":
                tokens[sample.labels["is_streaming"]] = sample.value
            elif sample.name == "sglang:num_requests_total":
                requests[sample.labels["is_streaming"]] = sample.value
            elif sample.name == "sglang:spec_verify_calls_total":
                verify += sample.value
            elif sample.name == "sglang:num_aborted_requests_total":
                aborted += sample.value
            elif sample.name == "sglang:spec_accept_length":
                gauge = sample.value
    return Scrape(tokens, requests, verify, aborted, gauge, labels)


def _models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG, weight_bytes=4 << 20)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)
    return target, drafter


def _start(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str], time_scale: float) -> testing.SimProcess:
    target, drafter = _models(tmp_path_factory)
    args = f"--model-path {target} --served-model-name kimi-k2.6 --speculative-algorithm DFLASH"
    args += f" --speculative-draft-model-path {drafter} --enable-metrics"
    return testing.start(
        args.split(),
        log_path=tmp_path_factory.mktemp("log") / "sim.log",
        env={"SPECGATE_SIM_SEED": "5", **env},
        time_scale=time_scale,
    )


@pytest.fixture(scope="module")
def fallback_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("knob") / "fallback"


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory, fallback_file: Path) -> Iterator[testing.SimProcess]:
    proc = _start(tmp_path_factory, {"SPECGATE_SIM_FALLBACK_FILE": str(fallback_file)}, 0.001)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    """Slow enough (0.2 wall s per simulated s) that a client can leave while its request is still generating."""
    proc = _start(tmp_path_factory, {}, 0.2)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def _generate(sim: testing.SimProcess, prompt: str, tokens: int, *, stream: bool = False) -> dict:
    body = {"text": prompt, "sampling_params": {"max_new_tokens": tokens}, "stream": stream}
    if not stream:
        resp = httpx.post(sim.url + "/generate", json=body, timeout=60)
        resp.raise_for_status()
        return resp.json()["meta_info"]
    last = None
    with httpx.stream("POST", sim.url + "/generate", json=body, timeout=60) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if line.startswith("data: {"):
                last = line
    assert last is not None
    return json.loads(last.removeprefix("data: "))["meta_info"]


def _window(sim: testing.SimProcess, n: int = 4, tokens: int = 300) -> tuple[float, list[dict]]:
    """Δgeneration_tokens / Δspec_verify_calls over ``n`` requests (two at a time, streamed and not), and their
    meta_info."""
    before = _scrape(sim)
    metas: list[dict] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        meta = _generate(sim, CODE_PROMPT if i % 2 else MATH_PROMPT, tokens + 7 * i, stream=i % 2 == 1)
        with lock:
            metas.append(meta)

    for pair in range(0, n, 2):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(pair, min(pair + 2, n))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    after = _scrape(sim)
    assert len(metas) == n
    generated = after.total_tokens - before.total_tokens
    verify_calls = after.verify_calls - before.verify_calls
    # exactly the finished requests' own counts (observe_one_finished_request)
    assert after.total_requests - before.total_requests == n
    assert generated == sum(m["completion_tokens"] for m in metas)
    assert verify_calls == sum(m["spec_verify_ct"] for m in metas)
    return generated / verify_calls, metas


def _switch(path: Path, on: bool) -> None:
    if on:
        path.write_text("silent fallback\n")
    else:
        path.unlink(missing_ok=True)
    time.sleep(FALLBACK_POLL_SECONDS + 0.2)  # the engine stat()s the knob at most this often


def _server_figures(sim: testing.SimProcess) -> tuple[float, dict]:
    info = httpx.get(sim.url + "/server_info", timeout=10).json()["internal_states"][0]
    load = httpx.get(sim.url + "/v1/loads", timeout=10).json()["loads"][0]
    return info["avg_spec_accept_length"], load["speculative"]


def test_windowed_acceptance_follows_the_fallback_file(sim: testing.SimProcess, fallback_file: Path) -> None:
    try:
        ratio, _ = _window(sim)
        assert ratio > 2.0

        _switch(fallback_file, on=True)
        httpx.post(sim.url + "/flush_cache", timeout=10).raise_for_status()  # server-side averages start over
        ratio, metas = _window(sim)
        assert ratio == 1.0
        for meta in metas:  # one token per forward step, the prefill's included
            assert meta["spec_verify_ct"] == meta["completion_tokens"]
            assert meta["spec_accept_length"] == 1.0
            assert meta["spec_num_correct_drafts"] == 0
        assert _scrape(sim).accept_gauge == 1.0
        avg, speculative = _server_figures(sim)
        assert avg == 1.0
        assert speculative["accept_length"] == 1.0
        assert speculative["accept_rate"] == 0.0
        assert "exists: decoding without speculation" in sim.log()

        _switch(fallback_file, on=False)
        httpx.post(sim.url + "/flush_cache", timeout=10).raise_for_status()
        ratio, _ = _window(sim)
        assert ratio > 2.0
        gauge = _scrape(sim).accept_gauge
        assert gauge is not None
        assert gauge > 2.0
        avg, speculative = _server_figures(sim)
        assert avg > 2.0
        assert speculative["accept_length"] > 2.0
    finally:
        fallback_file.unlink(missing_ok=True)


def test_each_finished_request_bumps_the_counters_as_observe_one_finished_request(sim: testing.SimProcess) -> None:
    before = _scrape(sim)
    plain = _generate(sim, CODE_PROMPT, 120)
    streamed = _generate(sim, MATH_PROMPT, 90, stream=True)
    after = _scrape(sim)
    for flag, meta in (("false", plain), ("true", streamed)):
        assert after.requests[flag] - before.requests.get(flag, 0.0) == 1
        assert after.tokens[flag] - before.tokens.get(flag, 0.0) == meta["completion_tokens"]
    assert after.verify_calls - before.verify_calls == plain["spec_verify_ct"] + streamed["spec_verify_ct"]
    # metrics_collector.py: the token and request counters carry is_streaming, spec_verify_calls_total does not
    for name in ("sglang:generation_tokens", "sglang:num_requests", "sglang:prompt_tokens"):
        assert {"true", "false"} <= {labels["is_streaming"] for labels in after.labels[name]}
        assert all(set(labels) == {*LABELS, "is_streaming"} for labels in after.labels[name])
    assert after.labels["sglang:spec_verify_calls"] == [LABELS]


def _help(sim: testing.SimProcess, family: str) -> tuple[str, str]:
    families = {f.name: f for f in text_string_to_metric_families(httpx.get(sim.url + "/metrics").text)}
    return families[family].type, families[family].documentation


def _wait_for(sim: testing.SimProcess, done: Callable[[Scrape], bool], timeout: float = 20.0) -> Scrape:
    deadline = time.monotonic() + timeout
    while True:
        scrape = _scrape(sim)
        if done(scrape):
            return scrape
        assert time.monotonic() < deadline, scrape
        time.sleep(0.05)


def test_a_client_that_disconnects_mid_stream_is_counted_aborted(slow: testing.SimProcess) -> None:
    before = _scrape(slow)
    body = {"model": "kimi-k2.6", "prompt": MATH_PROMPT, "max_tokens": 2000, "stream": True}
    with httpx.stream("POST", slow.url + "/v1/completions", json=body, timeout=30) as resp:
        chunks = 0
        for line in resp.iter_lines():
            chunks += line.startswith("data: {")
            if chunks == 3:
                break  # leave mid-generation: closing the response closes the connection
    # the abort is counted once; the running request still finishes after one more forward pass (scheduler.py
    # abort_request, "Abort method 3") and is observed with the tokens and verify steps it made
    after = _wait_for(slow, lambda s: s.aborted == before.aborted + 1 and s.total_requests == before.total_requests + 1)
    generated = after.tokens["true"] - before.tokens.get("true", 0.0)
    assert 3 <= generated < 2000
    assert 0 < after.verify_calls - before.verify_calls < generated
    assert after.labels["sglang:num_aborted_requests"] == [LABELS]
    assert _help(slow, "sglang:num_aborted_requests") == ("counter", "Number of requests aborted.")
    time.sleep(0.3)
    assert _scrape(slow).aborted == before.aborted + 1  # once per request


def test_a_non_streaming_client_that_leaves_is_aborted_at_the_next_look(slow: testing.SimProcess) -> None:
    before = _scrape(slow)
    body = {"text": MATH_PROMPT, "sampling_params": {"max_new_tokens": 6000}}
    # tokenizer_manager.py::_stream_one_response looks for the client every SGLANG_REQUEST_STATE_WAIT_TIMEOUT (4 s);
    # 6000 tokens take about 9 simulated seconds
    with pytest.raises(httpx.TimeoutException):
        httpx.post(slow.url + "/generate", json=body, timeout=0.05)
    after = _wait_for(slow, lambda s: s.aborted == before.aborted + 1 and s.total_requests == before.total_requests + 1)
    assert 0 < after.tokens["false"] - before.tokens.get("false", 0.0) < 6000


def test_a_request_that_finishes_is_not_aborted(slow: testing.SimProcess) -> None:
    before = _scrape(slow)
    _generate(slow, MATH_PROMPT, 40, stream=True)
    _generate(slow, MATH_PROMPT, 40)
    after = _scrape(slow)
    assert after.aborted == before.aborted
    assert after.total_requests == before.total_requests + 2


def test_in_the_engine_an_aborted_waiting_request_is_dropped_and_a_running_one_finishes_after_one_more_pass() -> None:
    # scheduler.py::abort_request: "Abort method 1" pops a waiting request (no finished output, so no
    # observe_one_finished_request); "Abort method 3" lets a running one take one more forward pass, then it finishes
    metrics = Metrics("kimi-k2.6")
    engine = Engine(SpecConfig("DFLASH", 8), max_running=1, time_scale=0.0, num_draft_tokens=8, metrics=metrics)
    running = Job(prompt_tokens=100, pieces=["x"] * 400, finish_reason={"type": "length"}, kind="chat", seed=1)
    waiting = Job(prompt_tokens=100, pieces=["x"] * 400, finish_reason={"type": "length"}, kind="chat", seed=2)

    async def scenario() -> int:
        engine.start()
        try:
            steps = engine.generate(running)
            await anext(steps)  # the prefill's token
            await anext(steps)  # one decode step
            queued = asyncio.get_running_loop().create_task(anext(engine.generate(waiting)))
            await asyncio.sleep(0)
            assert engine.waiting  # one slot: the second request waits
            emitted = running.emitted
            queued.cancel()  # both clients leave, the waiting one first
            with contextlib.suppress(asyncio.CancelledError):
                await queued
            assert engine.waiting  # still queued (cancelled): the slot is taken until the running one finishes
            await steps.aclose()
            for _ in range(20):
                await asyncio.sleep(0)
            return emitted
        finally:
            await engine.stop()

    emitted = asyncio.run(scenario())
    value = metrics.registry.get_sample_value
    assert value("sglang:num_aborted_requests_total", LABELS) == 2
    assert value("sglang:num_requests_total", {**LABELS, "is_streaming": "false"}) == 1  # the running one only
    assert running.finished_ns is not None
    assert running.finish_reason["type"] == "abort"
    assert emitted < running.emitted < 400  # its last pass added tokens
    assert value("sglang:generation_tokens_total", {**LABELS, "is_streaming": "false"}) == running.emitted
    assert value("sglang:spec_verify_calls_total", LABELS) == running.verify_ct
    assert waiting.finished_ns is None
    assert waiting.emitted == 0
    assert not engine.running
    assert not engine.waiting
