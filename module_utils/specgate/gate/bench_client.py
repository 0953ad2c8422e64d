"""HTTP client for SGLang's API, built for measuring: one shared aiohttp session, streaming /generate parsed with
as little work per chunk as possible, timestamps taken when bytes arrive.

No stream event is parsed whole: SGLang's /generate stream repeats the whole text so far (and its token ids) in
every event, so parsing an event grows with the output, while all the loop needs is the token count. Per event
``meta_info.completion_tokens`` is read with one ``rfind`` and the digits after it; the last event's ``meta_info``
(the event's last key: prompt tokens, verify steps, finish reason) is parsed once, after the stream; an event of
any other shape, such as an error event, is parsed whole. JSON is read with orjson where the venv has it (a real
host's SGLang venv does: SGLang depends on it), with the stdlib's json otherwise (the demo's venv has the sim, not
orjson). Measured against SGLang's own client on the same server: scripts/bench_client.py.

Per-token inter-token latency follows SGLang's own benchmark (sglang.benchmark.serving): a chunk carrying n
new tokens after a gap g contributes n latencies of g/n, so the numbers compare with the community's.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import time
from dataclasses import dataclass, field

import aiohttp

try:  # orjson is SGLang's own dependency; stdlib json where it is absent (both take bytes, raise ValueError)
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - depends on the host venv
    _loads = json.loads

try:  # /metrics is read only where the venv has prometheus_client; /server_info and usage suffice otherwise
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - depends on the host venv
    text_string_to_metric_families = None


GENERATION_TOKENS = "sglang:generation_tokens_total"
SPEC_VERIFY_CALLS = "sglang:spec_verify_calls_total"
SERVER_COUNTERS = (GENERATION_TOKENS, SPEC_VERIFY_CALLS)


class BenchError(Exception):
    """A problem that stops the benchmark; the message says what to change."""


class TransportError(BenchError):
    """A request's exchange with the server broke: refused, reset, a body cut short (the engine died mid-stream), a
    stream event that is not JSON, or a timeout. The measurement it was part of is void."""


# Every way aiohttp reports a broken exchange: connection errors (refused, reset, server disconnected), payload
# errors (a chunked or sized body cut short) and timeouts. On Python 3.10 asyncio.TimeoutError is not the builtin
# TimeoutError (they merged in 3.11), so both are named.
TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, TimeoutError)


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_allocator_tuned: bool | None = None


def keep_read_buffers_in_heap() -> bool:
    """asyncio reads a socket into a fresh 256 KiB buffer on every read (selector_events.py, ``max_size``), above
    glibc malloc's mmap threshold (128 KiB until it adapts) and its trim threshold: in a small process such as this
    benchmark each streamed event can cost an mmap, a munmap and a heap trim, system time that measured a quarter
    of the client's CPU per token (17 of 68 µs at C=1; a large process like SGLang's benchmark, whose heap is
    fragmented, does not pay it). Fixed thresholds of 4 MiB and 64 MiB keep those buffers in the heap. Once per
    process; glibc only (elsewhere mallopt is absent or does nothing). True when the thresholds were set."""
    global _allocator_tuned  # noqa: PLW0603 - one process-wide setting, applied once
    if _allocator_tuned is None:
        try:
            mallopt = ctypes.CDLL(None).mallopt
            _allocator_tuned = bool(mallopt(_M_MMAP_THRESHOLD, 4 << 20)) and bool(mallopt(_M_TRIM_THRESHOLD, 64 << 20))
        except (OSError, AttributeError, TypeError):
            _allocator_tuned = False
    return _allocator_tuned


def describe_transport_error(exc: BaseException) -> str:
    """Class and text of a transport error; a bare timeout has no text of its own."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass
class RequestRecord:
    requested_tokens: int
    ok: bool = False
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int = 0
    verify_ct: int | None = None
    ttft: float | None = None
    latency: float | None = None
    itl: list[float] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def accept_length(self) -> float | None:
        if not self.verify_ct or not self.completion_tokens:
            return None
        return self.completion_tokens / self.verify_ct


_META_KEY = b'"meta_info":'


def chunk_meta(data: bytes) -> dict | None:
    """``meta_info`` of one /generate stream event, parsing only that object; None when the event has another shape
    (then the caller parses it whole). The key is found from the end: inside a JSON string a quote is always
    escaped, so ``"meta_info":`` can only be a key, and SGLang writes meta_info last
    (srt/managers/tokenizer_manager.py builds ``{"text", "output_ids", "meta_info"}`` in that order)."""
    at = data.rfind(_META_KEY)
    if at < 0:
        return None
    body = data[at + len(_META_KEY) :].rstrip()
    if not body.endswith(b"}"):
        return None
    try:
        meta = _loads(body[:-1])
    except ValueError:
        return None  # something follows meta_info: not the shape this shortcut knows
    return meta if isinstance(meta, dict) else None


_COMPLETION_KEY = b'"completion_tokens":'


def event_completion_tokens(data: bytes) -> int | None:
    """``meta_info.completion_tokens`` of one /generate stream event, read without parsing JSON (all the loop needs
    per event; the last event's meta_info is parsed whole once the stream ends); None when it is not there as a
    plain integer (the caller then parses the event). As with ``chunk_meta``, ``"completion_tokens":`` can only be
    a key, and in SGLang's events (text, output_ids, meta_info) only meta_info has it."""
    at = data.rfind(_COMPLETION_KEY)
    if at < 0:
        return None
    start = at + len(_COMPLETION_KEY)
    while data[start : start + 1] == b" ":
        start += 1
    end = start
    while end < len(data) and 48 <= data[end] <= 57:  # ASCII digits
        end += 1
    return int(data[start:end]) if end > start else None


def _finish_reason(meta: dict) -> str | None:
    reason = meta.get("finish_reason")
    if isinstance(reason, dict):
        return reason.get("type")
    return reason


def _auth_error(status: int, base_url: str) -> BenchError:
    return BenchError(
        f"the server at {base_url} refused the request with HTTP {status}: the API key is missing or wrong. "
        "spec_gate_api_key defaults to sglang_service_api_key: leave it unset, or set the key the service runs with."
    )


class Client:
    def __init__(self, base_url: str, api_key: str | None, request_timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = aiohttp.ClientTimeout(total=request_timeout_s)
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Client:
        keep_read_buffers_in_heap()
        # limit=0: no client-side cap on connections, so C=256 means 256 requests in flight.
        # trust_env=False (aiohttp's default, pinned here): the server is on this host's loopback, and a proxy set
        # in the environment (http_proxy) must neither catch these requests nor sit inside the measured latency.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, force_close=False),
            timeout=self.timeout,
            headers=self.headers,
            trust_env=False,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.close()

    def _unreachable(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"cannot reach the server at {self.base_url} ({exc}); is the service running and listening on that "
            "port? (the port comes from the specgate_release fact)"
        )

    def _broken(self, request: str, exc: BaseException, streamed_tokens: int = 0) -> TransportError:
        """The error to raise for a transport failure of ``request`` ("POST /generate")."""
        if isinstance(exc, aiohttp.ClientConnectorError):  # never connected: nothing listens (any more)
            return self._unreachable(exc)
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            detail = f"timed out after {self.timeout.total:g} s (spec_gate_bench_request_timeout_s)"
        else:
            detail = describe_transport_error(exc)
        after = f" after {streamed_tokens} streamed tokens" if streamed_tokens else ""
        return TransportError(
            f"{request} to {self.base_url} broke{after}: {detail}; if the engine died, its journal on the host says why"
        )

    async def request_json(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        assert self.session is not None
        try:
            async with self.session.request(method, self.base_url + path, json=body) as resp:
                text = await resp.text()
                if resp.status in (401, 403):
                    raise _auth_error(resp.status, self.base_url)
                try:
                    return resp.status, json.loads(text) if text else None
                except json.JSONDecodeError:
                    return resp.status, text
        except TRANSPORT_ERRORS as exc:
            raise self._broken(f"{method} {path}", exc) from exc

    async def server_info(self) -> dict:
        status, data = await self.request_json("GET", "/server_info")
        if status != 200 or not isinstance(data, dict):
            raise BenchError(f"GET /server_info answered HTTP {status}: {str(data)[:200]}")
        return data

    async def flush_cache(self, attempts: int = 20, pause_s: float = 0.25) -> None:
        """Reset the server's cumulative acceptance average; SGLang refuses while requests still run, so retry."""
        status, data = 0, None
        for _ in range(attempts):
            status, data = await self.request_json("POST", "/flush_cache")
            if status == 200:
                return
            await asyncio.sleep(pause_s)
        raise BenchError(f"POST /flush_cache kept failing (last HTTP {status}: {str(data)[:200]})")

    async def server_counters(self) -> dict[str, float] | None:
        """The server's own request counters (SERVER_COUNTERS, each summed over its labels), or None when /metrics is
        off or unparseable here. SGLang bumps them as each request finishes (tokenizer_manager.py →
        metrics_collector.py::observe_one_finished_request), so a difference over a cell has no lag."""
        if text_string_to_metric_families is None:
            return None
        assert self.session is not None
        try:
            async with self.session.get(self.base_url + "/metrics") as resp:
                if resp.status != 200:
                    return None
                text = await resp.text()
        except TRANSPORT_ERRORS as exc:
            raise self._broken("GET /metrics", exc) from exc
        totals: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in SERVER_COUNTERS:
                    totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        return totals  # a labelled counter has no sample before it first counts: absent here means 0

    async def generation_tokens(self) -> float | None:
        """sglang:generation_tokens_total summed over labels, or None when /metrics is off or unparseable here."""
        counters = await self.server_counters()
        return None if counters is None else counters.get(GENERATION_TOKENS, 0.0)

    async def generate_stream(self, text: str, max_tokens: int, temperature: float, ignore_eos: bool) -> RequestRecord:
        assert self.session is not None
        record = RequestRecord(requested_tokens=max_tokens)
        payload = {
            "text": text,
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": temperature, "ignore_eos": ignore_eos},
            "stream": True,
        }
        start = time.perf_counter()
        last_time = start
        last_tokens = 0
        last_event = b""
        try:
            async with self.session.post(self.base_url + "/generate", json=payload) as resp:
                if resp.status in (401, 403):
                    raise _auth_error(resp.status, self.base_url)
                if resp.status != 200:
                    record.error = f"HTTP {resp.status}: {(await resp.text())[:200]}"
                    return record
                async for line in resp.content:
                    if not line.startswith(b"data: "):
                        continue
                    now = time.perf_counter()
                    data = line[6:].strip()
                    if data == b"[DONE]":
                        break
                    tokens = event_completion_tokens(data)
                    if tokens is None:  # not the usual event: parse it to say what it is
                        meta = self._event_meta(data)
                        if "error" in meta:
                            record.error = str(meta["error"])[:200]
                            return record
                        tokens = int(meta.get("completion_tokens") or 0)
                    last_event = data
                    new = tokens - last_tokens
                    if new <= 0:
                        continue
                    if record.ttft is None:
                        record.ttft = now - start
                    else:
                        gap = (now - last_time) / new
                        record.itl.extend([gap] * new)
                    last_time, last_tokens = now, tokens
        except TRANSPORT_ERRORS as exc:
            # A stream that breaks (the engine died, a body cut short, a timeout) voids the cell it belongs to;
            # recording it as one failed request would let the cell's numbers stand on the survivors.
            raise self._broken("POST /generate", exc, last_tokens) from exc
        record.latency = time.perf_counter() - start
        # the last event's meta_info, parsed once: its totals, finish reason and acceptance are the request's
        meta = self._event_meta(last_event) if last_event else {}
        record.completion_tokens = int(meta.get("completion_tokens") or last_tokens)
        record.prompt_tokens = meta.get("prompt_tokens")
        verify = meta.get("spec_verify_ct")
        record.verify_ct = int(verify) if verify else None
        record.finish_reason = _finish_reason(meta)
        record.ok = True
        return record

    def _event_meta(self, data: bytes) -> dict:
        """meta_info of one stream event (only that object parsed when it can be); ``{"error": ...}`` for an error
        event; TransportError for an event that is not a JSON object (the stream was cut or garbled)."""
        meta = chunk_meta(data)
        if meta is not None:
            return meta
        try:
            chunk = _loads(data)
        except ValueError as exc:
            raise TransportError(
                f"POST /generate to {self.base_url}: a stream event is not JSON ({data[:80]!r}): "
                "the stream was cut or garbled"
            ) from exc
        if not isinstance(chunk, dict):
            raise TransportError(
                f"POST /generate to {self.base_url}: a stream event is not a JSON object ({data[:80]!r}): "
                "the stream was cut or garbled"
            )
        if "error" in chunk:
            return {"error": chunk["error"]}
        return chunk.get("meta_info") or {}

    async def prompt_tokens(self, text: str) -> int:
        """How many tokens the server's tokenizer makes of ``text`` (one generated token, then read meta_info)."""
        payload = {"text": text, "sampling_params": {"max_new_tokens": 1, "temperature": 0.0}}
        status, data = await self.request_json("POST", "/generate", payload)
        if status != 200 or not isinstance(data, dict):
            raise BenchError(f"POST /generate answered HTTP {status} while sizing prompts: {str(data)[:200]}")
        tokens = (data.get("meta_info") or {}).get("prompt_tokens")
        if not tokens:
            raise BenchError("the server's /generate answer has no meta_info.prompt_tokens; cannot size prompts")
        return int(tokens)

    async def chat(self, model: str, prompt: str, max_tokens: int) -> tuple[str, str | None]:
        """One greedy chat completion (chat template applied by the server, as users get it)."""
        body = {
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens,
            "temperature": 0.0,
        }
        status, data = await self.request_json("POST", "/v1/chat/completions", body)
        if status != 200 or not isinstance(data, dict) or not data.get("choices"):
            raise BenchError(f"POST /v1/chat/completions answered HTTP {status}: {str(data)[:200]}")
        choice = data["choices"][0]
        content = (choice.get("message") or {}).get("content") or ""
        return content, choice.get("finish_reason")
