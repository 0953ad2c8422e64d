"""Take one worker out of sglang-router and put it back, waiting for the router to have done it.

Both directions are idempotent (a worker already absent or present is left as it is) and bounded by a timeout. A
removal is refused before anything changes when it would leave fewer healthy workers behind the router than the
fleet's floor (sglang_router_min_healthy_workers): taking a replica out for a reconfigure must never take the
service down. The router's API and its quirks: router_client.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.fleet.router_client import FleetError, RouterClient, Worker, find, normalize_url


@dataclass
class WorkerResult:
    """What one add or remove did (or, in check mode, would do) and what the router reports afterwards."""

    url: str
    state: str  # what was asked: present or absent
    changed: bool
    message: str
    worker_id: str = ""
    waited_s: float = 0.0
    polls: int = 0
    healthy_before: int = 0
    healthy_after: int = 0
    workers: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "state": self.state,
            "changed": self.changed,
            "message": self.message,
            "worker_id": self.worker_id,
            "waited_s": round(self.waited_s, 3),
            "polls": self.polls,
            "healthy_before": self.healthy_before,
            "healthy_after": self.healthy_after,
            "workers": self.workers,
        }


def healthy_count(workers: list[Worker]) -> int:
    return sum(1 for worker in workers if worker.healthy)


def removal_refusal(workers: list[Worker], url: str, min_healthy: int) -> str | None:
    """Why removing ``url`` must not happen (it would leave fewer than ``min_healthy`` healthy workers), or None."""
    target = find(workers, url)
    left = [worker for worker in workers if worker.healthy and worker is not target]
    if len(left) >= min_healthy:
        return None
    others = ", ".join(worker.describe() for worker in workers if worker is not target) or "none"
    return (
        f"removing {url} from the router would leave {len(left)} healthy worker(s), fewer than "
        f"sglang_router_min_healthy_workers ({min_healthy}); nothing was removed. The other workers: {others}. "
        "Fix: bring the unhealthy workers back (or add one) first, or lower sglang_router_min_healthy_workers if "
        "serving from fewer replicas is acceptable."
    )


def _summaries(workers: list[Worker]) -> list[dict[str, Any]]:
    return [worker.summary() for worker in workers]


def remove_worker(
    router: RouterClient,
    url: str,
    min_healthy: int,
    timeout: float,
    *,
    interval: float = 0.5,
    check_mode: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> WorkerResult:
    """Remove ``url`` from the router and wait until the router no longer knows it.

    Idempotent: a URL the router does not list is left alone (changed False). Refused, raising FleetError before
    anything changes, when it would leave fewer than ``min_healthy`` healthy workers. In check mode the router is
    only read."""
    url = normalize_url(url, "worker_url")
    if min_healthy < 0:
        raise FleetError(f"sglang_router_min_healthy_workers: {min_healthy} is negative. Fix: use 0 or more.")
    workers = router.workers()
    before = healthy_count(workers)
    target = find(workers, url)
    if target is None:
        return WorkerResult(url, "absent", False, f"{url} is not behind the router; nothing to remove",
                            healthy_before=before, healthy_after=before, workers=_summaries(workers))
    refusal = removal_refusal(workers, url, min_healthy)
    if refusal:
        raise FleetError(refusal)
    after = before - (1 if target.healthy else 0)
    if check_mode:
        return WorkerResult(url, "absent", True, f"would remove {url} (id {target.id}) from the router",
                            worker_id=target.id, healthy_before=before, healthy_after=after,
                            workers=_summaries(workers))
    router.delete(target.id)
    start = clock()
    polls = 0
    last = "the removal was asked for"
    while True:
        polls += 1
        known = router.worker(target.id)
        if known is None:
            workers = router.workers()
            again = find(workers, url)
            if again is None:
                return WorkerResult(url, "absent", True, f"removed {url} (id {target.id}) from the router",
                                    worker_id=target.id, waited_s=clock() - start, polls=polls,
                                    healthy_before=before, healthy_after=healthy_count(workers),
                                    workers=_summaries(workers))
            last = f"listed again as {again.describe()}"
        else:
            failed = known.job_failed("RemoveWorker")
            if failed:
                raise FleetError(f"the router could not remove {url}: {failed}")
            last = f"still registered: {known.describe()}"
        elapsed = clock() - start
        if elapsed >= timeout:
            raise FleetError(f"the router still lists {url} {elapsed:.0f} s after it was asked to remove it "
                             f"(sglang_router_worker_timeout {timeout:g} s); last state: {last}")
        sleep(min(interval, max(timeout - elapsed, 0.0)))


def add_worker(
    router: RouterClient,
    url: str,
    timeout: float,
    *,
    api_key: str | None = None,
    interval: float = 0.5,
    check_mode: bool = False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> WorkerResult:
    """Register ``url`` with the router (its ``api_key`` is what the router sends the worker) and wait until the
    router reports it healthy.

    Idempotent: a URL already listed is not registered again (changed False), only waited for until healthy. Raises
    FleetError naming the URL and the last state seen when the router rejects it or the timeout passes. In check
    mode the router is only read."""
    url = normalize_url(url, "worker_url")
    workers = router.workers()
    before = healthy_count(workers)
    present = find(workers, url)
    if present is not None and present.healthy:
        return WorkerResult(url, "present", False, f"{url} is behind the router and healthy",
                            worker_id=present.id, healthy_before=before, healthy_after=before,
                            workers=_summaries(workers))
    if check_mode:
        message = f"would wait for {url} to be healthy" if present else f"would add {url} to the router"
        return WorkerResult(url, "present", present is None, message, worker_id=present.id if present else "",
                            healthy_before=before, healthy_after=before, workers=_summaries(workers))
    changed = present is None
    worker_id = present.id if present is not None else router.add(url, api_key)
    start = clock()
    polls = 0
    while True:
        polls += 1
        workers = router.workers()
        listed = find(workers, url)
        if listed is not None and listed.healthy:
            verb = "added" if changed else "waited for"
            message = f"{verb} {url} (id {listed.id}); the router reports it healthy"
            return WorkerResult(url, "present", changed, message,
                                worker_id=listed.id, waited_s=clock() - start, polls=polls, healthy_before=before,
                                healthy_after=healthy_count(workers), workers=_summaries(workers))
        if listed is not None:
            last = f"listed, {listed.describe()}"
        else:
            job = router.worker(worker_id)
            failed = job.job_failed("AddWorker") if job is not None else None
            if failed and "already exists" not in failed:
                raise FleetError(f"the router could not register {url}: {failed}. Fix: check that the worker answers "
                                 "/health, /server_info and /model_info on that URL from the router's host (and its "
                                 "API key, sglang_router_worker_api_key).")
            last = (f"not listed yet, registration: {job.describe()}" if job is not None
                    else "not listed, and the router no longer knows its registration")
        elapsed = clock() - start
        if elapsed >= timeout:
            raise FleetError(
                f"the router did not report {url} healthy within {timeout:g} s (sglang_router_worker_timeout); last "
                f"state: {last}. The router keeps retrying a registration in the background. Fix: check that the "
                "worker serves /health on that URL from the router's host, or raise sglang_router_worker_timeout."
            )
        sleep(min(interval, max(timeout - elapsed, 0.0)))
