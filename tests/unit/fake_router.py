"""sglang-router 0.3.2's worker API in memory, answering as the real router does (module_utils/specgate/fleet/
router_client.py lists what it answers), and a worker's /v1/loads; both as an opener for the fleet code, and served
on loopback (``serve``) for the modules, which open real connections."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.fleet.router_client import HttpAnswer


def _answer(status: int, data: Any) -> HttpAnswer:
    return HttpAnswer(status, json.dumps(data).encode())


@dataclass
class FakeRouter:
    """Workers behind the router. A registration becomes listed after ``register_polls`` reads of GET /workers (the
    real one runs it in the background), a removal disappears after ``remove_polls`` reads of the worker."""

    api_key: str | None = None
    register_polls: int = 1
    remove_polls: int = 0
    listed: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    removing: dict[str, int] = field(default_factory=dict)
    unhealthy: set[str] = field(default_factory=set)  # URLs the router finds unhealthy
    reject: dict[str, str] = field(default_factory=dict)  # URL -> why its registration job fails
    keep: set[str] = field(default_factory=set)  # URLs whose removal never finishes
    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def register(self, url: str, healthy: bool = True) -> str:
        worker_id = str(uuid.uuid4())
        self.listed[worker_id] = {"id": worker_id, "url": url, "model_id": "kimi", "is_healthy": healthy, "load": 0,
                                  "worker_type": "regular"}
        return worker_id

    def writes(self) -> list[tuple[str, str, Any]]:
        return [call for call in self.calls if call[0] != "GET"]

    def _tick(self) -> None:
        for worker_id, job in list(self.pending.items()):
            if job["url"] in self.reject:
                job["status"] = "failed"
                job["message"] = self.reject[job["url"]]
                continue
            job["polls"] -= 1
            if job["polls"] <= 0:
                del self.pending[worker_id]
                self.register_as(worker_id, job["url"])

    def register_as(self, worker_id: str, url: str) -> None:
        self.listed[worker_id] = {"id": worker_id, "url": url, "model_id": "kimi",
                                  "is_healthy": url not in self.unhealthy, "load": 0, "worker_type": "regular"}

    def opener(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout: float
               ) -> HttpAnswer:
        path = "/" + url.split("/", 3)[3] if url.count("/") >= 3 else "/"
        payload = json.loads(body) if body else None
        self.calls.append((method, path, payload))
        return self.handle(method, path, payload, headers)

    def handle(self, method: str, path: str, payload: Any, headers: Mapping[str, str]) -> HttpAnswer:
        if path == "/readiness":
            healthy = sum(1 for w in self.listed.values() if w["is_healthy"])
            if healthy:
                return _answer(200, {"status": "ready", "healthy_workers": healthy, "total_workers": len(self.listed)})
            return _answer(503, {"status": "not ready", "reason": "insufficient healthy workers"})
        if self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return HttpAnswer(401, b"")
        if path == "/workers" and method == "GET":
            self._tick()
            return _answer(200, {"workers": list(self.listed.values()), "total": len(self.listed), "stats": {}})
        if path == "/workers" and method == "POST":
            url = payload["url"]
            existing = next((w["id"] for w in self.listed.values() if w["url"] == url), None)
            worker_id = existing or str(uuid.uuid4())
            if existing is None:
                self.pending[worker_id] = {"url": url, "polls": self.register_polls, "status": "processing",
                                           "message": None, "api_key": payload.get("api_key")}
            return _answer(202, {"status": "accepted", "worker_id": worker_id, "url": url,
                                 "location": f"/workers/{worker_id}"})
        if path.startswith("/workers/"):
            worker_id = path.split("/")[2]
            if method == "DELETE":
                if worker_id in self.listed:
                    self.removing[worker_id] = self.remove_polls
                return _answer(202, {"status": "accepted", "worker_id": worker_id})
            if worker_id in self.removing:
                if self.removing[worker_id] <= 0 and self.listed[worker_id]["url"] not in self.keep:
                    del self.removing[worker_id]
                    del self.listed[worker_id]
                else:
                    self.removing[worker_id] -= 1
            if worker_id in self.listed:
                return _answer(200, self.listed[worker_id])
            if worker_id in self.pending:
                job = self.pending[worker_id]
                return _answer(200, {"id": worker_id, "url": job["url"], "is_healthy": False, "model_id": "unknown",
                                     "job_status": {"job_type": "AddWorker", "worker_url": job["url"],
                                                    "status": job["status"], "message": job["message"]}})
            return _answer(404, {"error": f"Worker {worker_id} not found", "code": "WORKER_NOT_FOUND"})
        return HttpAnswer(404, b"404: Not Found")


def loads_body(*ranks: tuple[int, int]) -> dict[str, Any]:
    """A /v1/loads answer of SGLang 0.5.23 with ?include=core, one (running, waiting) per DP rank."""
    return {
        "timestamp": "2026-01-01T00:00:00+00:00",
        "version": "0.5.23",
        "accelerator": "NVIDIA H200",
        "num_accelerators": 8,
        "loads": [
            {"timestamp": 1.0, "dp_rank": rank, "num_running_reqs": running, "num_waiting_reqs": waiting,
             "num_used_tokens": 0, "token_usage": 0.0, "utilization": 0.0}
            for rank, (running, waiting) in enumerate(ranks)
        ],
    }


@contextlib.contextmanager
def serve(handle) -> Iterator[str]:
    """Serve ``handle(method, path, payload, headers) -> HttpAnswer`` on a free loopback port; yields its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            answer = handle(self.command, self.path, json.loads(raw) if raw else None, dict(self.headers))
            self.send_response(answer.status or 500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        do_GET = do_POST = do_DELETE = _reply

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
