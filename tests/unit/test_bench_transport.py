"""The benchmark when the engine breaks a request: died mid-stream, stalled, garbled, gone. Each is one clear error
naming the request, then the cell, then spec_bench's failed result; never a traceback or a quietly thinner cell."""

from __future__ import annotations

import asyncio
import json

import pytest
import spec_bench as module  # library/spec_bench.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.gate.bench_client import BenchError, Client, TransportError
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, run_benchmark
from ansible.module_utils.testing import patch_module_args
from loopback_engine import STREAM_DIES, STREAM_GARBLED, STREAM_OK, STREAM_STALLS, LoopbackEngine

pytestmark = pytest.mark.host

CELL = "cell set chat, context short (64 tokens), concurrency 2"


def stream_once(base_url: str, timeout_s: float = 10.0):
    async def go():
        async with Client(base_url, None, timeout_s) as client:
            return await client.generate_stream("hello", 8, 0.0, True)

    return asyncio.run(go())


def settings(port: int) -> BenchSettings:
    return BenchSettings(
        port=port,
        sets=("chat",),
        contexts=(("short", 64),),
        concurrency=(2,),
        output_tokens=8,
        min_requests=4,
        warmup_requests=0,
        eval=False,
    )


def test_a_healthy_stream_is_a_complete_record():
    with LoopbackEngine(STREAM_OK) as engine:
        record = stream_once(engine.base_url)
    assert record.ok
    assert record.completion_tokens == 8
    assert record.prompt_tokens == 64


def test_an_engine_dying_mid_stream_is_a_transport_error_naming_the_request_and_the_tokens_seen():
    with LoopbackEngine(STREAM_DIES) as engine, pytest.raises(TransportError) as caught:
        stream_once(engine.base_url)
    message = str(caught.value)
    assert message.startswith(f"POST /generate to {engine.base_url} broke after 2 streamed tokens: ClientPayloadError")
    assert "journal" in message


def test_a_stalled_stream_times_out_naming_the_setting():
    with LoopbackEngine(STREAM_STALLS) as engine, pytest.raises(TransportError) as caught:
        stream_once(engine.base_url, timeout_s=0.3)
    assert "timed out after 0.3 s (spec_gate_bench_request_timeout_s)" in str(caught.value)


def test_a_stream_event_that_is_not_json_is_a_transport_error():
    with LoopbackEngine(STREAM_GARBLED) as engine, pytest.raises(TransportError, match="not JSON"):
        stream_once(engine.base_url)


def test_a_json_answer_cut_short_names_its_request():
    async def go(base_url: str) -> None:
        async with Client(base_url, None, 10.0) as client:
            await client.server_info()

    with LoopbackEngine(server_info_dies=True) as engine, pytest.raises(TransportError) as caught:
        asyncio.run(go(engine.base_url))
    assert str(caught.value).startswith(f"GET /server_info to {engine.base_url} broke: ClientPayloadError")


def test_an_engine_that_is_gone_is_unreachable():
    with LoopbackEngine() as engine:
        base_url = engine.base_url
    with pytest.raises(TransportError, match="cannot reach the server"):
        stream_once(base_url)


def test_the_runner_names_the_cell_and_the_request_error_and_sends_nothing_more():
    with LoopbackEngine(STREAM_DIES) as engine, pytest.raises(BenchError) as caught:
        asyncio.run(run_benchmark(settings(engine.port)))
    message = str(caught.value)
    assert message.startswith(f"run 1, {CELL}: POST /generate to {engine.base_url} broke after 2 streamed tokens")
    assert "ClientPayloadError" in message
    # Two workers, each stopped at its first broken stream: the cell's other two prompts were never sent.
    assert engine.requests.count("POST /generate stream") == 2


def test_spec_bench_fails_with_the_cell_and_the_error_not_a_traceback(capsys):
    with LoopbackEngine(STREAM_DIES) as engine:
        args = {
            "port": engine.port,
            "sets": ["chat"],
            "contexts": [{"name": "short", "tokens": 64}],
            "concurrency": [2],
            "output_tokens": 8,
            "min_requests": 4,
            "warmup_requests": 0,
            "eval": False,
        }
        with patch_module_args(args), pytest.raises(SystemExit):
            module.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] is True
    assert result["msg"].startswith(f"run 1, {CELL}: POST /generate to {engine.base_url} broke after 2 streamed")
    assert "ClientPayloadError" in result["msg"]
