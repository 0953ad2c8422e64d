"""``python -m specgate_sim.launch_server <SGLang flags>``: the simulated SGLang server.

Lifecycle (times are simulated seconds times SPECGATE_SIM_TIME_SCALE): process start (port closed) →
bind, load weights (/health 503, /v1/models already answers) → warm up (503) → "The server is fired up and
ready to roll!" (/health 200) → SIGTERM: exit. With SPECGATE_SIM_BIND_AFTER_LOAD=1 the port stays closed
through the load, which is SGLang 0.5.23's own order.

With --nnodes > 1 (specgate_sim.multinode): rank 0 waits for every node at --dist-init-addr before the load (and, with
--gated-launch-port, for POST /gate/activate); ranks >= 1 join it, load, then serve SGLang's dummy /health and ignore
SIGTERM until rank 0 exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import logging.config
import os
import shlex
import signal
import sys
import time

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage

from specgate_sim import args as sgl_args
from specgate_sim import simenv
from specgate_sim.engine import Engine
from specgate_sim.metrics import Metrics
from specgate_sim.multinode import (
    TORCH_DEFAULT_PG_TIMEOUT,
    Follower,
    GateServer,
    RankZero,
    serve_dummy_health,
    split_addr,
)
from specgate_sim.planning import Quality
from specgate_sim.resolve import ResolveError, resolve
from specgate_sim.server import ServerState, build_app
from specgate_sim.specmodel import PROFILES
from specgate_sim.tokenization import ModelTokenizer

# /v1/loads "accelerator" (sglang 0.5.23 srt/utils/common.py::get_device_name → torch.cuda.get_device_name) of each
# host profile, as the GPU fixtures under tests/ show the cards' names
ACCELERATOR_NAMES = {"ct200": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "b300": "NVIDIA B300 SXM6 AC"}

log = logging.getLogger("sglang.srt.entrypoints.http_server")
engine_log = logging.getLogger("sglang.srt.entrypoints.engine")

CRASH_TAIL = """Scheduler hit an exception: Traceback (most recent call last):
  File "sglang/srt/managers/scheduler.py", line 3158, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "sglang/srt/model_executor/model_runner.py", line 912, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. (specgate-sim: FAULT_CRASH_DURING_LOAD)
"""


class _InvalidHttpRequest(logging.Filter):
    """uvicorn, SGLang's HTTP server, meets bytes that are not HTTP/1.1 with one warning line ("Invalid HTTP request
    received.", uvicorn/protocols/http/*_impl.py) and a 400; aiohttp would log a traceback. sglang-router 0.3.2 sends
    such bytes on every worker registration: its gRPC health checks (HTTP/2) try the worker's HTTP port too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], BadHttpMessage):
            record.msg, record.args, record.exc_info, record.exc_text = "Invalid HTTP request received.", (), None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _log_setup(level: str) -> None:
    logging.getLogger("aiohttp.server").addFilter(_InvalidHttpRequest())
    # sglang 0.5.23: srt/utils/common.py::configure_logger — a JSON dictConfig named by
    # SGLANG_LOGGING_CONFIG_PATH replaces the default setup (a missing file is an error), else basicConfig.
    config_path = os.environ.get("SGLANG_LOGGING_CONFIG_PATH")
    if config_path:
        if not os.path.exists(config_path):
            raise FileNotFoundError(
                f"Setting SGLANG_LOGGING_CONFIG_PATH from env with {config_path} but it does not exist!"
            )
        with open(config_path, encoding="utf-8") as handle:
            logging.config.dictConfig(json.load(handle))
        return
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,  # stderr, as SGLang's basicConfig
    )


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` unless asked to stop first; True when asked to stop."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max(seconds, 0.0))
    return stop.is_set()


class _Listener:
    """The HTTP port: bound once, at the point of the lifecycle the bind order asks for."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.runner: web.AppRunner | None = None

    async def bind(self) -> bool:
        self.runner = web.AppRunner(build_app(self.state), access_log=None, handle_signals=False)
        await self.runner.setup()
        host, port = self.state.args["host"], self.state.args["port"]
        try:
            await web.TCPSite(self.runner, host, port).start()
        except OSError as exc:
            log.error("Failed to bind %s:%s: %s", host, port, exc)
            return False
        return True

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def _timeout(state: ServerState) -> float:
    """--dist-timeout in simulated seconds; None is PyTorch's default process-group timeout."""
    value = state.resolved.args.get("dist_timeout")
    return float(value) if value else TORCH_DEFAULT_PG_TIMEOUT


def _nodes(state: ServerState) -> tuple[int, int]:
    return int(state.resolved.args.get("nnodes") or 1), int(state.resolved.args.get("node_rank") or 0)


def _rendezvous(state: ServerState) -> tuple[str, int] | None:
    """rank 0's store (srt/distributed/bootstrap.py::_resolve_dist_init_method): --dist-init-addr, else a loopback
    port of SGLang's own choosing that no other node can know."""
    addr = state.resolved.args.get("dist_init_addr")
    return split_addr(addr) if addr else None


async def serve(state: ServerState, sim: simenv.SimEnv) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(signame: str) -> None:
        log.info("Received %s, shutting down.", signame)
        stop.set()

    for sig, name in ((signal.SIGTERM, "sigterm"), (signal.SIGINT, "sigint")):
        loop.add_signal_handler(sig, on_signal, name)

    nnodes, rank = _nodes(state)
    if nnodes > 1 and rank >= 1:
        return await _follower(state, sim, stop)
    rank0 = RankZero(nnodes) if nnodes > 1 else None
    gate = GateServer() if state.resolved.args.get("gated_launch_port") is not None else None
    listener = _Listener(state)
    try:
        lifecycle = asyncio.ensure_future(_lifecycle(state, sim, stop, listener, rank0=rank0, gate=gate))
        if rank0 is None:
            return await lifecycle
        lost = asyncio.ensure_future(rank0.lost.wait())
        await asyncio.wait({lifecycle, lost}, return_when=asyncio.FIRST_COMPLETED)
        if lifecycle.done():
            lost.cancel()
            return lifecycle.result()
        lifecycle.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lifecycle
        return await _peer_lost(state, sim, stop)
    finally:
        if rank0 is not None:
            await rank0.close()
        if gate is not None:
            await gate.close()
        await state.engine.stop()
        await listener.close()


async def _peer_lost(state: ServerState, sim: simenv.SimEnv, stop: asyncio.Event) -> int:
    """A joined node died: rank 0 hangs in its next collective (sgl-project/sglang#3099), /health fails, and the
    NCCL watchdog ends it after the process group's timeout."""
    state.phase = "peer_lost"  # not "up": /health and generation answer 503
    if await _wait(stop, sim.scaled(_timeout(state))):
        return 0
    log.error(
        "[PG ID 0 PG GUID 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE) ran for "
        "%d milliseconds before timing out.",
        int(_timeout(state) * 1000),
    )
    return 1


async def _form_world(
    state: ServerState, sim: simenv.SimEnv, stop: asyncio.Event, rank0: RankZero | None, gate: GateServer | None
) -> int | None:
    """Rank 0 between process start and the load: every node joins, then the gated launch (if any) is activated.
    None to go on, else the exit status."""
    args = state.resolved.args
    if rank0 is not None:
        host, port = _rendezvous(state) or ("127.0.0.1", 0)
        if not await rank0.listen(host, port):
            return 1
        log.info("Init parallel begin.")
        outcome = await rank0.wait_all(stop, sim.scaled(_timeout(state)), _timeout(state))
        if outcome != "joined":
            return 0 if outcome == "stopped" else 1
        await rank0.broadcast("world")
        log.info("Init parallel ends.")
    if gate is not None:
        # srt/distributed/gated_launch.py: served on the first rank's --host, only once the process group formed
        if not await gate.serve(args["host"], int(args["gated_launch_port"])):
            return 1
        engine_log.info("Gated launch waiting for activation. rank=0")
        tic = time.monotonic()
        halt = asyncio.ensure_future(stop.wait())
        activated = asyncio.ensure_future(gate.activated.wait())
        await asyncio.wait({halt, activated}, return_when=asyncio.FIRST_COMPLETED)
        halt.cancel()
        activated.cancel()
        if not gate.activated.is_set():
            return 0
        engine_log.info("Gated launch activated. elapsed=%.2f s", time.monotonic() - tic)
    if rank0 is not None:
        await rank0.broadcast("go")
    return None


async def _follower(state: ServerState, sim: simenv.SimEnv, stop: asyncio.Event) -> int:
    """A node of rank >= 1 (srt/entrypoints/engine.py, node_rank >= 1): join, wait for the gate, load, then serve the
    dummy health endpoint and run until rank 0 goes away. SIGTERM stops it only before its schedulers are ready."""
    resolved, args = state.resolved, state.resolved.args
    _, rank = _nodes(state)
    node = Follower(rank)
    dummy = None
    try:
        if await _wait(stop, sim.scaled(sim.start_seconds + sim.refuse_seconds)):
            return 0
        target = _rendezvous(state)
        if sim.never_join:
            log.warning("specgate-sim: FAULT_NEVER_JOIN — node_rank %d never reaches rank 0", rank)
        host, port = target or ("127.0.0.1", 0)
        log.info("Init parallel begin.")  # srt/distributed/bootstrap.py, on every rank
        outcome = await node.join(host, port, stop, sim.scaled(_timeout(state)), _timeout(state),
                                  never=sim.never_join or target is None)
        if outcome != "joined":
            return 0 if outcome == "stopped" else 1
        if sim.crash_after_join_seconds is not None:
            asyncio.get_running_loop().call_later(sim.scaled(sim.crash_after_join_seconds), _crash, rank)
        for word in ("world", "go"):
            heard = await node.expect(word, stop)
            if heard == "stopped":
                return 0
            if heard == "closed":
                log.error("node_rank %d: rank 0 closed the process group before the engine was ready", rank)
                return 1
        log.info("Load weight begin. model=%s (node_rank %d, simulated %.1f s)", args["model_path"], rank,
                 resolved.load_seconds)
        if sim.crash_during_load:
            if await _wait(stop, sim.scaled(resolved.load_seconds / 2)):
                return 0
            log.error(CRASH_TAIL)
            return 1
        if await _wait(stop, sim.scaled(resolved.load_seconds)):
            return 0
        log.info("Load weight end. type=%s", (resolved.target_config.get("architectures") or ["?"])[0])
        loop = asyncio.get_running_loop()
        loop.remove_signal_handler(signal.SIGTERM)
        loop.add_signal_handler(signal.SIGTERM, _follower_sigterm, rank)
        dummy = await serve_dummy_health(args["host"], int(args["port"]))
        if dummy is None:
            return 1
        await node.wait_rank0_gone()
        engine_log.error("Scheduler or DataParallelController %d terminated with 0", os.getpid())
        return 0
    finally:
        node.close()
        if dummy is not None:
            await dummy.cleanup()
        await state.engine.stop()


def _follower_sigterm(rank: int) -> None:
    # srt/entrypoints/engine.py: the follower's handler only logs; rank 0's ShutdownReq broadcast stops it
    engine_log.warning(
        "SIGTERM received on node_rank %d; waiting for the rank-0 ShutdownReq broadcast to stop the schedulers.", rank
    )


def _crash(rank: int) -> None:
    log.error("specgate-sim: FAULT_CRASH_AFTER_JOIN_SECONDS — node_rank %d crashed\n%s", rank, CRASH_TAIL)
    logging.shutdown()
    os._exit(1)  # a crashed node: no cleanup, the OS closes its connection to rank 0


async def _lifecycle(
    state: ServerState,
    sim: simenv.SimEnv,
    stop: asyncio.Event,
    listener: _Listener,
    *,
    rank0: RankZero | None = None,
    gate: GateServer | None = None,
) -> int:
    resolved = state.resolved
    # process start: tokenizer, scheduler and detokenizer processes come up; nothing listens yet
    if await _wait(stop, sim.scaled(sim.start_seconds + sim.refuse_seconds)):
        return 0
    if not sim.bind_after_load and not await listener.bind():
        return 1
    if rank0 is not None or gate is not None:
        code = await _form_world(state, sim, stop, rank0, gate)
        if code is not None:
            return code
    log.info(
        "Load weight begin. model=%s bytes=%d (simulated %.1f s)",
        resolved.args["model_path"],
        resolved.weight_bytes,
        resolved.load_seconds,
    )
    if sim.crash_during_load:
        if await _wait(stop, sim.scaled(resolved.load_seconds / 2)):
            return 0
        log.error(CRASH_TAIL)
        log.error("Received sigquit from a child process. It usually means the child failed.")
        return 1
    if await _wait(stop, sim.scaled(resolved.load_seconds)):
        return 0
    log.info("Load weight end. type=%s", (resolved.target_config.get("architectures") or ["?"])[0])
    # sglang 0.5.23: srt/entrypoints/engine.py::_launch_subprocesses waits for the schedulers to load the
    # model before http_server.py::_setup_and_run_http_server binds the port
    if sim.bind_after_load and not await listener.bind():
        return 1
    state.engine.start()
    if sim.never_healthy:
        log.warning("specgate-sim: FAULT_NEVER_HEALTHY — staying in warmup")
        await stop.wait()
        return 0
    # http_server.py::_wait_and_warmup: one warmup request, then ServerStatus.Up
    if await _wait(stop, sim.scaled(sim.warmup_seconds)):
        return 0
    state.phase = "up"
    log.info("The server is fired up and ready to roll!")
    await stop.wait()
    if sim.ignore_sigterm_seconds > 0:
        # a lingering old process: it keeps serving for a while after being told to stop
        log.warning("specgate-sim: ignoring SIGTERM for %.1f s", sim.ignore_sigterm_seconds)
        await asyncio.sleep(sim.scaled(sim.ignore_sigterm_seconds))
    state.phase = "shutting_down"
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sim = simenv.from_env()
    ns, merged = sgl_args.parse(argv, sim.reject_flag)
    _log_setup(ns.log_level)
    if sim.profile not in PROFILES:
        print(
            f"specgate-sim: SPECGATE_SIM_PROFILE must be one of {sorted(PROFILES)}, got {sim.profile!r}",
            file=sys.stderr,
        )
        return 1
    try:
        resolved = resolve(ns, sim)
    except ResolveError as exc:
        # SGLang dies in prepare_server_args with the exception's traceback; keep its last line
        print("Traceback (most recent call last):", file=sys.stderr)
        print('  File "sglang/launch_server.py", line 30, in <module>', file=sys.stderr)
        print(str(exc), file=sys.stderr)
        return 1
    # sglang 0.5.23: srt/entrypoints/engine.py logs the resolved args (api_key included) on its own logger
    engine_log.info("server_args=%s", resolved.args)
    metrics = Metrics(resolved.served_model_name) if resolved.args["enable_metrics"] else None
    cuda_graphs = (
        not resolved.args["disable_cuda_graph"] and resolved.args.get("cuda_graph_backend_decode") != "disabled"
    )
    engine = Engine(
        resolved.spec,
        max_running=int(resolved.args["max_running_requests"]),
        time_scale=sim.time_scale,
        accept_multiplier=sim.accept_multiplier,
        num_draft_tokens=resolved.args.get("speculative_num_draft_tokens"),
        cuda_graphs=cuda_graphs,
        metrics=metrics,
        lat=PROFILES[sim.profile],
        decode_log_interval=int(resolved.args["decode_log_interval"]),
        fallback_file=sim.fallback_file,
    )
    seed = sim.seed if sim.seed is not None else int(resolved.args["random_seed"])
    quality = Quality(seed, sim.wrong_fraction, sim.truncate_fraction)
    launch = shlex.join(merged)  # server_args.launch_command: the argv as parsed, config merged in
    # srt/managers/tokenizer_manager.py: the tokenizer is loaded from tokenizer_path at startup
    tokenizer = ModelTokenizer.load(resolved.args["tokenizer_path"])
    state = ServerState(resolved, engine, metrics, quality, launch, tokenizer)
    if str(resolved.args["device"]).startswith("cuda"):  # get_device_name answers None off CUDA (no torch.cuda)
        state.accelerator = ACCELERATOR_NAMES[sim.profile]
    return asyncio.run(serve(state, sim))


if __name__ == "__main__":
    sys.exit(main())
