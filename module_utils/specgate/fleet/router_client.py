"""A client for sglang-router 0.3.2's worker API, over common/http.py (Ansible's own HTTP client).

What the router answers, read from the sglang-router 0.3.2 wheel (the routes are in the Rust server,
`sglang_router/sglang_router_rs.abi3.so`; the flags in `sglang_router/router_args.py`) and run against it on loopback:

- ``POST /workers {"url", "api_key"?}`` → 202 ``{"status": "accepted", "worker_id": <uuid>, "url", "location",
  "message"}``. Registration runs in the background (the router probes the worker's ``/health``, then
  ``/server_info`` and ``/model_info``, with the worker's ``api_key`` as bearer). While it runs the worker is not in
  ``GET /workers``; ``GET /workers/{id}`` shows it with ``job_status``. A URL already registered gets its existing
  worker_id and a job that fails with "already exists". A URL with a trailing slash is another worker to the
  router, whose probes of ``<url>//health`` never succeed: URLs are normalised here.
- ``GET /workers`` → 200 ``{"workers": [{"id", "url", "model_id", "is_healthy", "load", "worker_type", ...}],
  "total", "stats"}``.
- ``GET /workers/{id}`` → 200 the worker, with ``job_status: {"job_type": "AddWorker"|"RemoveWorker", "status":
  "processing"|"failed"|..., "message"}`` while the router remembers a job; 404 ``{"code": "WORKER_NOT_FOUND"}``
  once it is gone; 400 for an id that is not a UUID.
- ``DELETE /workers/{id}`` → 202 ``{"status": "accepted", "worker_id"}``; the removal runs in the background, then
  ``GET /workers/{id}`` → 404.
- ``GET /readiness`` → 200 ``{"status": "ready", "healthy_workers", "total_workers"}``, or 503 ``{"status": "not
  ready", "reason": "insufficient healthy workers"}``; ``/liveness`` and ``/health`` answer 200 once it listens.
- Started with ``--api-key``, the router answers 401 on ``/workers`` without ``Authorization: Bearer <key>``;
  ``/readiness`` and ``/liveness`` stay open.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.common.http import HttpAnswer, host_port, request


class FleetError(Exception):
    """A router or worker answered something the fleet step cannot go on from; the message says what and the fix."""


# (method, url, body, headers, timeout) -> HttpAnswer; tests put a fake router behind it.
Opener = Callable[[str, str, bytes | None, Mapping[str, str], float], HttpAnswer]

def http_opener(
    method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout: float
) -> HttpAnswer:
    """One request without raising (common/http.py): loopback direct, refused and timed-out connections as ``error``."""
    return request(method, url, body, headers, timeout)


def normalize_url(url: str, variable: str = "url") -> str:
    """``http://host:port`` as the router should be given it: no trailing slash (the router appends ``/health``)."""
    text = (url or "").strip().rstrip("/")
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FleetError(f"{variable}: {url!r} is not an http(s)://host:port URL. Fix: give the URL the worker "
                         "serves on, e.g. http://10.0.0.11:30000.")
    if parts.query or parts.fragment:
        raise FleetError(f"{variable}: {url!r} carries a query or fragment. Fix: give only scheme, host and port.")
    return text


def worker_url(host: str, host_vars: Mapping[str, Any], default_port: int | str) -> str:
    """The URL a router registers a replica at: its sglang_router_worker_url, else its ansible_host (the inventory
    name without one) at its sglang_service_port (``default_port``, the service's default, without one)."""
    explicit = host_vars.get("sglang_router_worker_url")
    if explicit:
        return str(explicit)
    # The port as the inventory gives it: a mistyped one is the service stage's to refuse, naming its variable.
    port = host_vars.get("sglang_service_port") or default_port
    return f"http://{host_port(str(host_vars.get('ansible_host') or host), port)}"


@dataclass(frozen=True)
class Worker:
    """One worker as the router reports it."""

    id: str
    url: str
    healthy: bool
    model_id: str = ""
    load: int = 0
    job: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Worker:
        return cls(
            id=str(data.get("id") or ""),
            url=str(data.get("url") or ""),
            healthy=bool(data.get("is_healthy")),
            model_id=str(data.get("model_id") or ""),
            load=int(data.get("load") or 0),
            job=dict(data.get("job_status") or {}),
        )

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "url": self.url, "healthy": self.healthy, "model_id": self.model_id}

    def job_failed(self, job_type: str) -> str | None:
        """The router's message when its last job of this type failed for this worker, else None."""
        if self.job.get("job_type") == job_type and str(self.job.get("status", "")).lower() == "failed":
            return str(self.job.get("message") or "no message")
        return None

    def describe(self) -> str:
        text = f"{self.url} (id {self.id}) {'healthy' if self.healthy else 'not healthy'}"
        if self.job:
            text += f", last {self.job.get('job_type')} job {self.job.get('status')}"
            if self.job.get("message"):
                text += f": {self.job.get('message')}"
        return text


def find(workers: list[Worker], url: str) -> Worker | None:
    wanted = url.rstrip("/")
    return next((worker for worker in workers if worker.url.rstrip("/") == wanted), None)


class RouterClient:
    """sglang-router's worker API at ``base_url`` (``http://router:port``), with its API key when it has one."""

    def __init__(
        self, base_url: str, api_key: str | None = None, timeout: float = 10.0, opener: Opener = http_opener
    ) -> None:
        self.base_url = normalize_url(base_url, "router_url")
        self.api_key = api_key or None
        self.timeout = timeout
        self.opener = opener

    def _call(self, method: str, path: str, payload: Mapping[str, Any] | None = None) -> HttpAnswer:
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = None
        if payload is not None:
            body = json.dumps(dict(payload)).encode()
            headers["Content-Type"] = "application/json"
        return self.opener(method, self.base_url + path, body, headers, self.timeout)

    def _fail(self, what: str, answer: HttpAnswer) -> FleetError:
        if answer.status in (401, 403):
            return FleetError(f"the router at {self.base_url} refused {what} (HTTP {answer.status}): it was started "
                              "with an API key this call did not send. Fix: set sglang_router_api_key to the router's "
                              "key.")
        return FleetError(f"the router at {self.base_url} did not answer {what} as sglang-router 0.3.2 does: "
                          f"{answer.describe()}")

    def workers(self) -> list[Worker]:
        """Every registered worker (``GET /workers``)."""
        answer = self._call("GET", "/workers")
        data = answer.json()
        if answer.status != 200 or not isinstance(data, dict) or not isinstance(data.get("workers"), list):
            raise self._fail("GET /workers", answer)
        return [Worker.from_json(item) for item in data["workers"] if isinstance(item, dict)]

    def worker(self, worker_id: str) -> Worker | None:
        """One worker by id (``GET /workers/{id}``), with its last job; None once the router no longer knows it."""
        answer = self._call("GET", f"/workers/{urllib.parse.quote(worker_id, safe='')}")
        if answer.status == 404:
            return None
        data = answer.json()
        if answer.status != 200 or not isinstance(data, dict):
            raise self._fail(f"GET /workers/{worker_id}", answer)
        return Worker.from_json(data)

    def add(self, url: str, api_key: str | None = None) -> str:
        """Ask the router to register ``url`` (``POST /workers``); the worker_id of the background registration."""
        payload: dict[str, Any] = {"url": url}
        if api_key:
            payload["api_key"] = api_key
        answer = self._call("POST", "/workers", payload)
        data = answer.json()
        if answer.status not in (200, 201, 202) or not isinstance(data, dict) or not data.get("worker_id"):
            raise self._fail(f"POST /workers for {url}", answer)
        return str(data["worker_id"])

    def delete(self, worker_id: str) -> None:
        """Ask the router to remove a worker (``DELETE /workers/{id}``); a worker already gone is no error."""
        answer = self._call("DELETE", f"/workers/{urllib.parse.quote(worker_id, safe='')}")
        if answer.status not in (200, 202, 204, 404):
            raise self._fail(f"DELETE /workers/{worker_id}", answer)

    def readiness(self) -> HttpAnswer:
        """``GET /readiness``: 200 with a healthy worker, 503 without; the answer as it came."""
        return self._call("GET", "/readiness")
