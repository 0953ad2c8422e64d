"""Run the local hub in a background thread on a free loopback port (for pytest and benchmarks)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from specgate_sim.hub import STATE, HubState, make_app


@dataclass
class RunningHub:
    url: str
    state: HubState

    def resolve_requests(self, method: str = "GET") -> list[dict]:
        """The file requests served so far (method GET = bodies, HEAD = metadata probes)."""
        return [r for r in self.state.requests if r["method"] == method and "/resolve/" in r["path"]]


@contextmanager
def running_hub(root: Path, tokens: list[str] | None = None, **options: object) -> Iterator[RunningHub]:
    """Serve `root` on 127.0.0.1:<free port> until the block ends."""
    app = make_app(root, tokens, **options)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    thread = threading.Thread(target=loop.run_forever, name="specgate-hub", daemon=True)
    thread.start()
    try:
        yield RunningHub(url=f"http://127.0.0.1:{port}", state=app[STATE])
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
