"""A stand-in SGLang engine on loopback (a real aiohttp server in a thread of its own) that can die mid-stream,
stall, or garble its stream, and a stand-in proxy that records every connection it is offered."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator

from aiohttp import web

# What POST /generate does with a streamed request.
STREAM_OK = "ok"  # every token, then [DONE]
STREAM_DIES = "dies"  # two tokens, then the connection closes without the chunked body's end: the engine died
STREAM_STALLS = "stalls"  # headers, then nothing until the test ends
STREAM_GARBLED = "garbled"  # an event that is not JSON

PROMPT_TOKENS = 64


def _event(completion_tokens: int) -> bytes:
    meta = {"completion_tokens": completion_tokens, "prompt_tokens": PROMPT_TOKENS, "finish_reason": None}
    return b"data: " + json.dumps({"text": "t" * completion_tokens, "meta_info": meta}).encode() + b"\n\n"


class LoopbackEngine:
    """``with LoopbackEngine(stream=STREAM_DIES) as engine:`` serves on ``engine.base_url`` until the block ends."""

    def __init__(self, stream: str = STREAM_OK, *, server_info_dies: bool = False) -> None:
        self.stream = stream
        self.server_info_dies = server_info_dies
        self.requests: list[str] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._release: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="loopback-engine", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackEngine:
        self._thread.start()
        assert self._ready.wait(10), "the loopback engine did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        # Stalled handlers end first, so the server's cleanup does not wait on them.
        self._loop.call_soon_threadsafe(self._stop)
        self._thread.join(10)

    def _stop(self) -> None:
        assert self._release is not None
        self._release.set()
        self._loop.stop()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._release = asyncio.Event()
        app = web.Application()
        app.router.add_get("/server_info", self._server_info)
        app.router.add_post("/flush_cache", self._flush_cache)
        app.router.add_post("/generate", self._generate)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())
        self._loop.close()

    async def _server_info(self, request: web.Request) -> web.StreamResponse:
        self.requests.append("GET /server_info")
        body = json.dumps({"model_path": "/models/t", "served_model_name": "t", "internal_states": []}).encode()
        if not self.server_info_dies:
            return web.Response(body=body, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(body[: len(body) // 2])
        return self._die(request, resp)

    async def _flush_cache(self, _request: web.Request) -> web.Response:
        self.requests.append("POST /flush_cache")
        return web.Response(text="ok")

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        payload = await request.json()
        self.requests.append("POST /generate" + (" stream" if payload.get("stream") else ""))
        if not payload.get("stream"):  # prompt sizing: one token, read meta_info.prompt_tokens
            return web.json_response({"text": "t", "meta_info": {"prompt_tokens": PROMPT_TOKENS}})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        if self.stream == STREAM_STALLS:
            assert self._release is not None
            await self._release.wait()
            return resp
        if self.stream == STREAM_GARBLED:
            await resp.write(_event(1) + b"data: {not json\n\n")
            await resp.write_eof()
            return resp
        await resp.write(_event(1))
        await resp.write(_event(2))
        if self.stream == STREAM_DIES:
            return self._die(request, resp)
        wanted = payload["sampling_params"]["max_new_tokens"]
        for n in range(3, wanted + 1):
            await resp.write(_event(n))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    @staticmethod
    def _die(request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        # What a killed engine leaves behind: what was sent arrives (close() flushes), the chunked body never ends.
        assert request.transport is not None
        request.transport.close()
        return resp


class RecordingProxy:
    """A listening socket posing as the host's HTTP proxy: it counts the connections it gets and answers each with
    502, so a client that went through it sees a failure it cannot mistake for the real server's answer."""

    def __init__(self) -> None:
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="recording-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(10)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _addr = self._sock.accept()
            except OSError:  # the accept timeout: look at the stop flag again
                continue
            self.connections += 1
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                except OSError:
                    pass


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on an ephemeral loopback port running ``handler``; yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()

