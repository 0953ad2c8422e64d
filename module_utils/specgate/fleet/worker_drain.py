"""Drain a worker the router no longer sends to: wait until its own queue is empty, bounded by a timeout.

The router's load figures are no measure of this (they stay 0 under round_robin, and its /get_loads asks for a
/get_load SGLang 0.5.23 no longer serves), so the worker itself is asked: ``GET /v1/loads`` of SGLang 0.5.23
(``sglang/srt/entrypoints/v1_loads.py``) answers ``{"timestamp", "version", "accelerator", "num_accelerators",
"loads": [{"dp_rank", "num_running_reqs", "num_waiting_reqs", ...}, ...]}``, one entry per DP rank (the fields of
``LoadSnapshot`` in ``sglang/srt/managers/load_snapshot.py``; ``?include=core`` leaves out the sections). The
worker is idle when running + waiting requests, summed over its ranks, are 0. With ``--api-key`` the endpoint wants
the bearer key (``sglang/srt/utils/auth.py``: only /health*, /ready* and /metrics* are open).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.fleet.router_client import (
    FleetError,
    HttpAnswer,
    Opener,
    http_opener,
    normalize_url,
)

LOADS_PATH = "/v1/loads?include=core"


@dataclass(frozen=True)
class Load:
    """One reading of the worker's queue: requests running and waiting, summed over its DP ranks."""

    running: int
    waiting: int
    ranks: int

    @property
    def busy(self) -> int:
        return self.running + self.waiting


def parse_loads(data: Any) -> Load | None:
    """The worker's load from a /v1/loads body, or None when the body is not that endpoint's answer."""
    if not isinstance(data, dict) or not isinstance(data.get("loads"), list):
        return None
    running = waiting = 0
    for rank in data["loads"]:
        if not isinstance(rank, dict):
            return None
        running += int(rank.get("num_running_reqs") or 0)
        waiting += int(rank.get("num_waiting_reqs") or 0)
    return Load(running, waiting, len(data["loads"]))


@dataclass
class DrainResult:
    """How the drain went: idle or not, how long it took, and each change of the queue it saw (not every poll)."""

    url: str
    idle: bool
    waited_s: float = 0.0
    polls: int = 0
    reason: str = ""  # why the worker is not drained ("" once it is)
    summary: str = ""  # how it drained
    listening: bool = True
    last: dict[str, int] | None = None
    observed: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0

    @property
    def in_flight_at_start(self) -> int | None:
        """Requests running or waiting at the first reading, right after the worker left the router: what the drain
        had to wait for. 0 when nothing listened; None when no reading came."""
        if self.observed:
            return int(self.observed[0]["running"]) + int(self.observed[0]["waiting"])
        return 0 if not self.listening else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "idle": self.idle,
            "waited_s": round(self.waited_s, 3),
            "polls": self.polls,
            "reason": self.reason or self.summary,
            "listening": self.listening,
            "last": self.last,
            "observed": self.observed,
            "in_flight_at_start": self.in_flight_at_start,
            "errors": self.errors,
        }


def _refused(answer: HttpAnswer) -> bool:
    return answer.status is None and "ConnectionRefused" in (answer.error or "")


def read_load(
    worker_base_url: str, *, api_key: str | None = None, timeout: float = 10.0, opener: Opener = http_opener
) -> tuple[Load | None, HttpAnswer]:
    """One ``GET /v1/loads``: the load (None when the answer is not one) and the answer itself.

    Raises FleetError when the answer says waiting cannot help: the endpoint is missing or the key is wrong."""
    url = normalize_url(worker_base_url, "worker_url")
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    answer = opener("GET", url + LOADS_PATH, None, headers, timeout)
    if answer.status == 404:
        raise FleetError(f"{url} does not serve /v1/loads (HTTP 404), so its queue cannot be watched while it drains. "
                         "Fix: run an engine that serves it (SGLang 0.5.23 does: srt/entrypoints/v1_loads.py).")
    if answer.status in (401, 403):
        raise FleetError(f"{url} refused /v1/loads (HTTP {answer.status}): the worker has an API key this call did "
                         "not send. Fix: set sglang_router_worker_api_key to the engine's key "
                         "(sglang_service_api_key).")
    load = parse_loads(answer.json()) if answer.status == 200 else None
    return load, answer


def wait_worker_idle(
    worker_base_url: str,
    timeout: float,
    *,
    api_key: str | None = None,
    interval: float = 1.0,
    request_timeout: float = 10.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    opener: Opener = http_opener,
) -> DrainResult:
    """Poll the worker's ``/v1/loads`` until no request runs or waits, for up to ``timeout`` seconds.

    A refused connection counts as drained (no process listens on the port, so none serves a request; reported as
    ``listening: false``); other errors and odd answers are retried until the timeout. Returns the result, idle or
    not: the caller decides what a worker still busy at the timeout means."""
    url = normalize_url(worker_base_url, "worker_url")
    start = clock()
    result = DrainResult(url=url, idle=False)
    previous: tuple[int, int] | None = None
    while True:
        result.polls += 1
        load, answer = read_load(url, api_key=api_key, timeout=request_timeout, opener=opener)
        elapsed = clock() - start
        if load is not None:
            result.last = {"running": load.running, "waiting": load.waiting}
            if (load.running, load.waiting) != previous:
                result.observed.append({"t": round(elapsed, 3), "running": load.running, "waiting": load.waiting})
                previous = (load.running, load.waiting)
            if load.busy == 0:
                result.idle = True
                result.summary = f"idle after {elapsed:.1f} s: no request running or waiting"
                break
        elif _refused(answer):
            result.idle = True
            result.listening = False
            result.summary = f"nothing listens on {url} ({answer.error}): no request can be in flight"
            break
        else:
            result.errors += 1
        if elapsed >= timeout:
            if result.last is not None:
                result.reason = (f"{url} still has {result.last['running']} running and {result.last['waiting']} "
                                 f"waiting request(s) after {elapsed:.0f} s (sglang_router_drain_timeout "
                                 f"{timeout:g} s)")
            else:
                result.reason = (f"{url} gave no reading of its queue in {elapsed:.0f} s (sglang_router_drain_timeout "
                                 f"{timeout:g} s); last answer: {answer.describe()}")
            break
        sleep(min(interval, max(timeout - elapsed, 0.0)))
    result.waited_s = clock() - start
    return result
