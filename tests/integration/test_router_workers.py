"""The fleet code against the real router: sglang-router 0.3.2 (``python -m sglang_router.launch_router`` from the
project's venv, pinned in requirements/controller.txt) in front of two simulated SGLang servers, all on 127.0.0.1.
Both workers go in, one comes out while the floor of one healthy worker holds, the last one is refused, and a worker
taken out in the middle of a request drains once its own /v1/loads says the request finished."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible.module_utils.specgate.fleet.router_client import FleetError, RouterClient, find
from ansible.module_utils.specgate.fleet.router_workers import add_worker, remove_worker
from ansible.module_utils.specgate.fleet.worker_drain import read_load, wait_worker_idle
from specgate_sim import testing

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return testing.write_model_dir(tmp_path_factory.mktemp("models") / "target", testing.TARGET_CONFIG)


@pytest.fixture(scope="module")
def sims(target: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[testing.SimProcess, ...]]:
    logs = tmp_path_factory.mktemp("sims")
    # The first simulates at real speed, so one request stays in flight for a couple of seconds (the drain test).
    slow = testing.start(["--model-path", str(target)], log_path=logs / "slow.log", time_scale=1.0)
    fast = testing.start(["--model-path", str(target)], log_path=logs / "fast.log")
    try:
        slow.wait_ready(60)
        fast.wait_ready()
        yield slow, fast
    finally:
        slow.stop()
        fast.stop()


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterClient]:
    port, metrics_port = testing.free_port(), testing.free_port()
    log_path = tmp_path_factory.mktemp("router") / "router.log"
    argv = [sys.executable, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(port),
            "--policy", "round_robin", "--health-check-interval-secs", "1", "--prometheus-host", "127.0.0.1",
            "--prometheus-port", str(metrics_port)]
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    client = RouterClient(f"http://127.0.0.1:{port}", timeout=5)
    try:
        deadline = time.monotonic() + 30
        while client.readiness().status is None:
            assert proc.poll() is None, f"the router exited {proc.returncode}:\n{log_path.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"the router did not listen:\n{log_path.read_text()[-4000:]}"
            time.sleep(0.1)
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _busy(worker_url: str) -> int:
    load, _answer = read_load(worker_url)
    return load.busy if load is not None else 0


def _urls(router: RouterClient) -> dict[str, bool]:
    return {worker.url: worker.healthy for worker in router.workers()}


def test_both_workers_go_in_one_comes_out_the_last_is_refused_and_the_first_goes_back(router, sims):
    slow, fast = sims
    assert router.readiness().status == 503  # no worker yet

    first = add_worker(router, slow.url + "/", 30, interval=0.1)  # the trailing slash is dropped
    second = add_worker(router, fast.url, 30, interval=0.1)
    assert first.changed
    assert second.changed
    assert _urls(router) == {slow.url: True, fast.url: True}
    assert router.readiness().status == 200
    assert not add_worker(router, fast.url, 30).changed  # present and healthy: nothing to do

    removed = remove_worker(router, slow.url, 1, 30, interval=0.1)
    assert removed.changed
    assert (removed.healthy_before, removed.healthy_after) == (2, 1)
    assert router.worker(removed.worker_id) is None  # DELETE /workers/{id} → 202, then GET → 404
    assert _urls(router) == {fast.url: True}
    assert not remove_worker(router, slow.url, 1, 30).changed  # already absent

    with pytest.raises(FleetError, match=r"would leave 0 healthy worker\(s\), fewer than "
                                         r"sglang_router_min_healthy_workers \(1\); nothing was removed"):
        remove_worker(router, fast.url, 1, 30, interval=0.1)
    assert _urls(router) == {fast.url: True}
    assert router.readiness().status == 200

    back = add_worker(router, slow.url, 30, interval=0.1)
    assert back.changed
    assert back.worker_id != removed.worker_id
    assert _urls(router) == {slow.url: True, fast.url: True}


def test_a_worker_taken_out_mid_request_drains_once_its_own_queue_is_empty(router, sims):
    slow, fast = sims
    for sim in sims:
        add_worker(router, sim.url, 30, interval=0.1)
    answers: list[int] = []

    def long_request() -> None:
        body = json.dumps({"text": "Tell a long story.", "sampling_params": {"max_new_tokens": 160,
                                                                             "ignore_eos": True}}).encode()
        request = urllib.request.Request(slow.url + "/generate", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answers.append(response.status)

    thread = threading.Thread(target=long_request)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while _busy(slow.url) == 0:
            assert time.monotonic() < deadline, "the long request never showed in the worker's /v1/loads"
            time.sleep(0.05)

        remove_worker(router, slow.url, 1, 30, interval=0.1)
        assert find(router.workers(), slow.url) is None
        drained = wait_worker_idle(slow.url, 60, interval=0.2)
    finally:
        thread.join(60)

    assert drained.idle
    assert drained.observed[0]["running"] == 1  # it waited for the request in flight ...
    assert drained.observed[-1] == {"t": drained.observed[-1]["t"], "running": 0, "waiting": 0}
    assert drained.waited_s > 0
    assert answers == [200]  # ... which finished: removal from the router does not cut it off

    assert add_worker(router, slow.url, 30, interval=0.1).changed
    assert _urls(router) == {slow.url: True, fast.url: True}
