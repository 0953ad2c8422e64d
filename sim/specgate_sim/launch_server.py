"""``python -m specgate_sim.launch_server <SGLang flags>``: the simulated SGLang server.

Lifecycle (times are simulated seconds times SPECGATE_SIM_TIME_SCALE): process start (port closed) →
bind, load weights (/health 503, /v1/models already answers) → warm up (503) → "The server is fired up and
ready to roll!" (/health 200) → SIGTERM: exit. With SPECGATE_SIM_BIND_AFTER_LOAD=1 the port stays closed
through the load, which is SGLang 0.5.23's own order.
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

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage

from specgate_sim import args as sgl_args
from specgate_sim import simenv
from specgate_sim.engine import Engine
from specgate_sim.metrics import Metrics
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


async def serve(state: ServerState, sim: simenv.SimEnv) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(signame: str) -> None:
        log.info("Received %s, shutting down.", signame)
        stop.set()

    for sig, name in ((signal.SIGTERM, "sigterm"), (signal.SIGINT, "sigint")):
        loop.add_signal_handler(sig, on_signal, name)

    listener = _Listener(state)
    try:
        return await _lifecycle(state, sim, stop, listener)
    finally:
        await state.engine.stop()
        await listener.close()


async def _lifecycle(state: ServerState, sim: simenv.SimEnv, stop: asyncio.Event, listener: _Listener) -> int:
    resolved = state.resolved
    # process start: tokenizer, scheduler and detokenizer processes come up; nothing listens yet
    if await _wait(stop, sim.scaled(sim.start_seconds + sim.refuse_seconds)):
        return 0
    if not sim.bind_after_load and not await listener.bind():
        return 1
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
