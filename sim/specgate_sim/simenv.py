"""Sim-only knobs. They are environment variables, never flags, so the sim's command line stays
exactly SGLang's: a config that starts the sim is a config SGLang would be given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "SPECGATE_SIM_"


@dataclass(frozen=True)
class SimEnv:
    time_scale: float = 1.0  # every simulated duration is multiplied by this (0.001 in tests)
    profile: str = "ct200"  # host latency profile: ct200 (PCIe, SM120) or b300 (NVLink)
    start_seconds: float = 2.0  # "process start": port not bound yet
    bind_after_load: bool = False  # True: SGLang 0.5.23's own order, port closed until the weights are in
    warmup_seconds: float = 2.0  # after loading, /health still 503 (SGLang's warmup request)
    load_bandwidth: float = 0.9e9  # bytes/s of weight files (a 550 GB model loads in ~610 s)
    load_seconds: float | None = None  # fixed load time instead of bytes / bandwidth
    seed: int | None = None  # falls back to --random-seed, then 0
    wrong_fraction: float = 0.0
    truncate_fraction: float = 0.0
    accept_multiplier: float = 1.0
    crash_during_load: bool = False
    never_healthy: bool = False
    slow_load_seconds: float = 0.0
    refuse_seconds: float = 0.0
    ignore_sigterm_seconds: float = 0.0
    reject_flag: str | None = None
    # multi-node (specgate_sim.multinode), on a node of rank >= 1: it never reaches rank 0's store (gives up after
    # --dist-timeout), or it crashes this many simulated seconds after joining (during the gate, the load or serving)
    never_join: bool = False
    crash_after_join_seconds: float | None = None
    # while a file exists at this path the engine decodes as SGLang does after a silent fallback to plain decoding
    # (engine.py::Engine.fallback_active); removing it returns to speculation
    fallback_file: str | None = None

    def scaled(self, seconds: float) -> float:
        return seconds * self.time_scale


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(PREFIX + name)
    return default if raw in (None, "") else float(raw)


def _bool(env: Mapping[str, str], name: str) -> bool:
    return env.get(PREFIX + name, "").strip().lower() in ("1", "true", "yes", "on")


def from_env(env: Mapping[str, str] | None = None) -> SimEnv:
    env = os.environ if env is None else env
    load_seconds = env.get(PREFIX + "LOAD_SECONDS")
    seed = env.get(PREFIX + "SEED")
    crash_after_join = env.get(PREFIX + "FAULT_CRASH_AFTER_JOIN_SECONDS")
    return SimEnv(
        time_scale=_float(env, "TIME_SCALE", 1.0),
        profile=env.get(PREFIX + "PROFILE") or "ct200",
        start_seconds=_float(env, "START_SECONDS", 2.0),
        bind_after_load=_bool(env, "BIND_AFTER_LOAD"),
        warmup_seconds=_float(env, "WARMUP_SECONDS", 2.0),
        load_bandwidth=_float(env, "LOAD_BANDWIDTH", 0.9e9),
        load_seconds=float(load_seconds) if load_seconds else None,
        seed=int(seed) if seed else None,
        wrong_fraction=_float(env, "WRONG_FRACTION", 0.0),
        truncate_fraction=_float(env, "TRUNCATE_FRACTION", 0.0),
        accept_multiplier=_float(env, "ACCEPT_MULTIPLIER", 1.0),
        crash_during_load=_bool(env, "FAULT_CRASH_DURING_LOAD"),
        never_healthy=_bool(env, "FAULT_NEVER_HEALTHY"),
        slow_load_seconds=_float(env, "FAULT_SLOW_LOAD_SECONDS", 0.0),
        refuse_seconds=_float(env, "FAULT_REFUSE_SECONDS", 0.0),
        ignore_sigterm_seconds=_float(env, "FAULT_IGNORE_SIGTERM_SECONDS", 0.0),
        reject_flag=env.get(PREFIX + "REJECT_FLAG") or None,
        never_join=_bool(env, "FAULT_NEVER_JOIN"),
        crash_after_join_seconds=float(crash_after_join) if crash_after_join else None,
        fallback_file=env.get(PREFIX + "FALLBACK_FILE") or None,
    )
