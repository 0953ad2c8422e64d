"""Multi-node SGLang, as the sim plays it: one deployment over `--nnodes` processes.

What SGLang 0.5.23 does, and what the sim keeps of it:
  - Flags (srt/arg_groups/fields/parallel.py): --nnodes, --node-rank, --dist-init-addr HOST:PORT (alias
    --nccl-init-addr), --dist-timeout (seconds; None: PyTorch's default_pg_timeout, 30 min,
    torch/distributed/constants.py), --gated-launch-port.
  - Rendezvous: rank 0 hosts torch.distributed's TCPStore at --dist-init-addr; ranks >= 1 connect to it. Rank 0 waits
    for every node until the timeout ("Timed out after {} seconds waiting for clients. {}/{} clients joined.", c10d
    TCPStore); a node that cannot reach it gives up after the same timeout ("The client socket has timed out after
    {} while trying to connect to ({}, {})."). The sim speaks its own line protocol over that TCP connection:
    "join <rank>", then "world" once every node is in, then "go" once the gate (if any) is activated; the
    connection stays open for the process group's life, so a node that dies is seen by its peers.
  - Gated launch (srt/distributed/gated_launch.py, called from srt/distributed/bootstrap.py::
    measure_pre_model_load_memory, after the process group forms and before the weights load): the first rank serves
    GET /health and POST /gate/activate (both "OK") on --host:--gated-launch-port; every rank blocks until it is
    activated. The gate has no timeout; the server stays up for the process's life.
  - Followers (srt/entrypoints/engine.py, node_rank >= 1): no tokenizer and no API. Once their schedulers are ready
    they install a SIGTERM handler that only logs (rank 0's ShutdownReq broadcast stops them) and start
    srt/utils/common.py::launch_dummy_health_check_server on --host:--port: /health, /health_generate and /ping
    answer 200 whatever the schedulers' state. They exit when their schedulers do: when rank 0 goes away.
  - Rank 0 losing a node after the world formed hangs in its next collective until the NCCL watchdog times out
    (sgl-project/sglang#3099: it does not exit by itself sooner); its /health fails meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from aiohttp import web

log = logging.getLogger("sglang.srt.distributed.parallel_state")
gate_log = logging.getLogger("sglang.srt.distributed.gated_launch")

TORCH_DEFAULT_PG_TIMEOUT = 1800.0  # torch/distributed/constants.py::default_pg_timeout (30 min)
CONNECT_RETRY_SECONDS = 0.05  # real seconds between a follower's connection attempts (TCPStore retries too)


def split_addr(addr: str) -> tuple[str, int]:
    """srt/utils/network.py::NetworkAddress.parse: HOST:PORT, an IPv6 host in brackets."""
    if addr.startswith("["):
        host, _, port = addr[1:].partition("]:")
        return host, int(port)
    host, _, port = addr.rpartition(":")
    return host, int(port)


class GateServer:
    """srt/distributed/gated_launch.py::_GatedLaunchServer: GET /health and POST /gate/activate on the first rank."""

    def __init__(self) -> None:
        self.activated = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def serve(self, host: str, port: int) -> bool:
        app = web.Application()

        async def health(_: web.Request) -> web.Response:
            return web.Response(text="OK")  # PlainTextResponse("OK")

        async def activate(_: web.Request) -> web.Response:
            self.activated.set()
            return web.Response(text="OK")

        app.router.add_get("/health", health)
        app.router.add_post("/gate/activate", activate)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, host, port).start()
        except OSError as exc:
            gate_log.error("Gated launch control server failed to bind %s:%s: %s", host, port, exc)
            return False
        gate_log.info("Gated launch control server started on %s:%s", host, port)
        return True

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


async def serve_dummy_health(host: str, port: int) -> web.AppRunner | None:
    """srt/utils/common.py::launch_dummy_health_check_server: a follower's port answers 200, whatever its state."""
    app = web.Application()

    async def ok(_: web.Request) -> web.Response:
        return web.Response(status=200)

    for path in ("/ping", "/health", "/health_generate"):
        app.router.add_get(path, ok)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        logging.getLogger("sglang.srt.utils.common").error("Dummy health check server failed to start: %s", exc)
        await runner.cleanup()
        return None
    logging.getLogger("sglang.srt.utils.common").info(
        "Dummy health check server started in background thread at %s:%s", host, port
    )
    return runner


class RankZero:
    """The rendezvous rank 0 hosts: who joined, and whether a joined node went away."""

    def __init__(self, nnodes: int) -> None:
        self.nnodes = nnodes
        self.peers: dict[int, asyncio.StreamWriter] = {}
        self.all_joined = asyncio.Event()
        self.lost = asyncio.Event()
        self.lost_rank: int | None = None
        self._closing = False
        self._server: asyncio.Server | None = None

    async def listen(self, host: str, port: int) -> bool:
        try:
            self._server = await asyncio.start_server(self._peer, host, port)
        except OSError as exc:
            log.error("Failed to start the rendezvous store at %s:%s: %s", host, port, exc)
            return False
        return True

    async def _peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await reader.readline()).decode().split()
        except ConnectionError:
            line = []
        rank = int(line[1]) if len(line) == 2 and line[0] == "join" and line[1].isdigit() else None
        if rank is None or not 1 <= rank < self.nnodes or rank in self.peers:
            writer.close()
            return
        self.peers[rank] = writer
        log.info("node_rank %d joined the process group (%d/%d nodes)", rank, len(self.peers) + 1, self.nnodes)
        if len(self.peers) == self.nnodes - 1:
            self.all_joined.set()
        with contextlib.suppress(ConnectionError):
            await reader.read()  # EOF: the node's process is gone
        if not self._closing and self.lost_rank is None:
            self.lost_rank = rank
            log.error("node_rank %d closed its connection to the process group", rank)
            self.lost.set()

    async def wait_all(self, stop: asyncio.Event, timeout: float, timeout_label: float) -> str:
        """"joined", "stopped" or "timeout" (logged as torch's store does)."""
        waits = {asyncio.ensure_future(self.all_joined.wait()): "joined", asyncio.ensure_future(stop.wait()): "stopped"}
        done, pending = await asyncio.wait(waits, timeout=max(timeout, 0.0), return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if not done:
            log.error(
                "torch.distributed.DistStoreError: Timed out after %d seconds waiting for clients. %d/%d clients "
                "joined.",
                int(timeout_label),
                len(self.peers) + 1,
                self.nnodes,
            )
            return "timeout"
        return "joined" if self.all_joined.is_set() else "stopped"

    async def broadcast(self, line: str) -> None:
        for writer in self.peers.values():
            with contextlib.suppress(ConnectionError):
                writer.write(f"{line}\n".encode())
                await writer.drain()

    async def close(self) -> None:
        """Rank 0 exiting: its ShutdownReq broadcast, and then the store going away, end every follower."""
        self._closing = True
        for writer in self.peers.values():
            writer.close()
        if self._server is not None:
            self._server.close()


class Follower:
    """A node of rank >= 1: its connection to rank 0's store."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def join(
        self, host: str, port: int, stop: asyncio.Event, timeout: float, timeout_label: float, *, never: bool
    ) -> str:
        """"joined", "stopped" or "timeout". `never`: the node's connections never get through (a firewall, a
        wrong address), so it gives up after the timeout as a real node would."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while time.monotonic() < deadline:
            if stop.is_set():
                return "stopped"
            if not never:
                try:
                    self.reader, self.writer = await asyncio.open_connection(host, port)
                except OSError:
                    pass
                else:
                    self.writer.write(f"join {self.rank}\n".encode())
                    await self.writer.drain()
                    return "joined"
            pause = min(CONNECT_RETRY_SECONDS, max(deadline - time.monotonic(), 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=pause)
        if stop.is_set():
            return "stopped"
        log.error(
            "torch.distributed.DistNetworkError: The client socket has timed out after %dms while trying to connect "
            "to (%s, %d).",
            int(timeout_label * 1000),
            host,
            port,
        )
        return "timeout"

    async def expect(self, word: str, stop: asyncio.Event) -> str:
        """Wait for rank 0's `word`: returns it, "stopped", or "closed" when rank 0 went away."""
        assert self.reader is not None
        read = asyncio.ensure_future(self.reader.readline())
        halt = asyncio.ensure_future(stop.wait())
        await asyncio.wait({read, halt}, return_when=asyncio.FIRST_COMPLETED)
        if not read.done():
            read.cancel()
            return "stopped"
        halt.cancel()
        try:
            line = read.result().decode().strip()
        except ConnectionError:
            line = ""
        return word if line == word else "closed"

    async def wait_rank0_gone(self) -> None:
        assert self.reader is not None
        with contextlib.suppress(ConnectionError):
            await self.reader.read()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
