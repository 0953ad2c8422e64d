"""The sim against the real router: sglang-router 0.3.2 (``python -m sglang_router.launch_router``, pinned in
requirements/controller.txt) registers it as a worker, routes to it, scrapes it and removes it, all on 127.0.0.1.

What the router does with a worker (read from the running binary with --log-level debug and a recording proxy;
sim/README.md keeps the list): ``POST /workers`` answers 202 and runs a background workflow. detect_connection_mode
GETs ``/health`` (200 → connection_mode HTTP; it also tries gRPC health checks on the same port); discover_metadata
GETs ``/server_info`` (else ``/get_server_info``: served_model_name → model_id, tp_size, dp_size, model_path) and
``/model_info`` (else ``/get_model_info``: architectures, model_type), best effort; then the worker is activated
healthy. Afterwards ``/health`` every --health-check-interval-secs, ``/metrics`` for ``/engine_metrics``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from specgate_sim import testing

ROUTER_VERSION = "0.3.2"
MODEL = "kimi-k2.6"
CODE_PROMPT = (
    "Write a Python function `gcd(a, b)` that returns the greatest common divisor of the integers a and b. "
    "Return only the code in a ```python block."
)
TIME_SCALE = 0.1  # a long request stays in flight for about a second


@dataclass
class Router:
    proc: subprocess.Popen[str]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def _until(what: str, check, timeout: float, context) -> object:
    """Poll ``check()`` until it returns something truthy; fail naming ``what`` (with ``context()``) after timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"{what} within {timeout:.0f} s\n{context()}")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG, weight_bytes=4 << 20)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)
    return target, drafter


@pytest.fixture(scope="module")
def sim(models: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    target, drafter = models
    args = f"--model-path {target} --served-model-name {MODEL} --speculative-algorithm DFLASH"
    args += f" --speculative-draft-model-path {drafter} --enable-metrics --host 127.0.0.1"
    proc = testing.start(
        args.split(),
        log_path=tmp_path_factory.mktemp("log") / "sim.log",
        env={"SPECGATE_SIM_SEED": "5"},
        time_scale=TIME_SCALE,
    )
    try:
        proc.wait_ready(timeout=30)
        yield proc
    finally:
        proc.stop()


def _require_router() -> None:
    # a missing router is a failure, never a skip: the fleet's drain relies on this contract
    if importlib.util.find_spec("sglang_router") is None:
        pytest.fail(f"sglang-router is not installed: requirements/controller.txt pins sglang-router=={ROUTER_VERSION}")
    assert importlib.metadata.version("sglang-router") == ROUTER_VERSION, "the contract was read from 0.3.2"


def test_the_pinned_router_is_installed() -> None:
    _require_router()


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    _require_router()
    port, metrics_port = testing.free_port(), testing.free_port()
    log_path = tmp_path_factory.mktemp("log") / "router.log"
    argv = [sys.executable, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(metrics_port), "--log-level", "debug"]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
    router = Router(proc, port, log_path)
    try:

        def up() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"the router exited {proc.returncode}:\n{router.log()}")
            try:
                return httpx.get(router.url + "/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        _until("the router never answered /health", up, 60, router.log)
        yield router
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _worker(router: Router, url: str) -> dict | None:
    workers = httpx.get(router.url + "/workers", timeout=5).json()["workers"]
    return next((w for w in workers if w["url"] == url), None)


def _load(sim: testing.SimProcess) -> tuple[int, int]:
    (load,) = httpx.get(sim.url + "/v1/loads", timeout=5).json()["loads"]
    return load["num_running_reqs"], load["num_waiting_reqs"]


def _sim_gauge(sim: testing.SimProcess, name: str) -> float:
    families = {f.name: f for f in text_string_to_metric_families(httpx.get(sim.url + "/metrics", timeout=5).text)}
    (sample,) = families[name].samples
    return sample.value


def test_the_router_registers_routes_to_scrapes_and_removes_the_sim(
    router: Router, sim: testing.SimProcess, models: tuple[Path, Path]
) -> None:
    def context() -> str:
        return f"--- router log (tail)\n{router.log()}\n--- sim log (tail)\n{sim.log()[-3000:]}"

    # 1. register: 202 at once, the probes run in the background
    resp = httpx.post(router.url + "/workers", json={"url": sim.url}, timeout=10)
    assert resp.status_code == 202, resp.text
    worker_id = resp.json()["worker_id"]
    assert resp.json()["location"] == f"/workers/{worker_id}"
    worker = _until(
        "GET /workers never showed the sim healthy",
        lambda: (w := _worker(router, sim.url)) is not None and w["is_healthy"] and w,
        60,
        context,
    )
    assert isinstance(worker, dict)
    assert (worker["id"], worker["model_id"], worker["connection_mode"]) == (worker_id, MODEL, "HTTP")
    # what discover_metadata read: /server_info's served_model_name, tp_size, dp_size, model_path and
    # /model_info's architectures, model_type
    assert worker["metadata"] == {
        "served_model_name": MODEL,
        "tp_size": "1",
        "dp_size": "1",
        "model_path": str(models[0]),
        "architectures": '["DeepseekV3ForCausalLM"]',
        "model_type": "kimi_k2",
    }, context()
    assert httpx.get(router.url + f"/workers/{worker_id}", timeout=5).json()["is_healthy"] is True

    # 2. requests through the router reach the sim
    params = {"max_new_tokens": 256, "temperature": 0}
    out = httpx.post(router.url + "/generate", json={"text": CODE_PROMPT, "sampling_params": params}, timeout=60)
    assert out.status_code == 200, out.text
    assert "def gcd(a, b):" in out.json()["text"]
    assert out.json()["meta_info"]["spec_verify_ct"] > 0
    for i in range(2):
        body = {"model": MODEL, "messages": [{"role": "user", "content": f"Say hello #{i}"}], "max_tokens": 24}
        body["return_spec_tokens_details"] = True
        chat = httpx.post(router.url + "/v1/chat/completions", json=body, timeout=60)
        assert chat.status_code == 200, chat.text
        assert chat.json()["usage"]["completion_tokens"] == 24
        assert chat.json()["choices"][0]["message"]["content"]
        # the router re-serialises the chat request from its own type (max_tokens -> max_completion_tokens) and
        # drops what that type lacks: no sglext through the router, only straight from the worker
        assert "sglext" not in chat.json()
        assert "sglext" in httpx.post(sim.url + "/v1/chat/completions", json=body, timeout=60).json()

    # 3. /engine_metrics: the sim's /metrics parsed (# TYPE lines needed), worker_addr added, and the router's
    # exposition spells sglang:spec_accept_length as sglang_spec_accept_length
    scraped = httpx.get(router.url + "/engine_metrics", timeout=10)
    assert scraped.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    assert "sglang_spec_accept_length" in families, context()
    (accept,) = families["sglang_spec_accept_length"].samples
    assert families["sglang_spec_accept_length"].type == "gauge"
    assert accept.labels["worker_addr"] == sim.url
    assert accept.labels["model_name"] == MODEL
    assert accept.value == pytest.approx(_sim_gauge(sim, "sglang:spec_accept_length"))
    assert 1.0 < accept.value < 9.0

    # 4. drain watch on the worker: /v1/loads is nonzero while a request is in flight, zero once it finished
    long_body = {"text": "Tell me a long story.", "sampling_params": {"max_new_tokens": 1500, "ignore_eos": True}}
    result: dict[str, httpx.Response] = {}
    inflight = threading.Thread(
        target=lambda: result.update(resp=httpx.post(router.url + "/generate", json=long_body, timeout=120))
    )
    inflight.start()
    try:
        busy = _until("/v1/loads never showed the request in flight", lambda: sum(_load(sim)) > 0, 30, context)
        assert busy
    finally:
        inflight.join(120)
    assert result["resp"].status_code == 200, result["resp"].text
    assert result["resp"].json()["meta_info"]["completion_tokens"] == 1500
    _until("/v1/loads never fell to zero after the request", lambda: _load(sim) == (0, 0), 10, context)
    assert _sim_gauge(sim, "sglang:num_running_reqs") == _sim_gauge(sim, "sglang:num_queue_reqs") == 0

    # 5. remove: 202, then the worker is gone (404)
    gone = httpx.delete(router.url + f"/workers/{worker_id}", timeout=10)
    assert gone.status_code == 202, gone.text
    _until(
        "GET /workers/{id} never answered 404 after DELETE",
        lambda: httpx.get(router.url + f"/workers/{worker_id}", timeout=5).status_code == 404,
        10,
        context,
    )
    assert _worker(router, sim.url) is None
    # the router's gRPC health checks hit the HTTP port too: a uvicorn-style warning line each, never a traceback
    assert "Traceback" not in sim.log(), context()
