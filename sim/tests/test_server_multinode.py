"""The sim's multi-node mode (specgate_sim.multinode), two real sim processes on loopback: rank 0 is ready only once
every node joined its --dist-init-addr, followers answer SGLang's dummy /health and ignore SIGTERM until rank 0 exits,
the gated launch's control server, and the faults (a node that never joins, a node that crashes after joining)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest
from specgate_sim import testing

JOIN_WAIT_S = 60
LOAD = {"SPECGATE_SIM_START_SECONDS": "0", "SPECGATE_SIM_LOAD_SECONDS": "300", "SPECGATE_SIM_WARMUP_SECONDS": "0"}


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG, weight_bytes=1 << 20)


class Pair:
    """Rank 0 and rank 1 of one deployment: their ports and how to start each."""

    def __init__(self, tmp_path: Path, target: Path, *extra: str) -> None:
        self.tmp_path, self.target, self.extra = tmp_path, target, list(extra)
        # PyTorch's default 30 min is 1.8 s at the tests' time scale: on a busy machine rank 1's start (imports)
        # took longer and rank 0 gave up before it joined. A minute, unless the test is about the timeout.
        if "--dist-timeout" not in self.extra:
            self.extra += ["--dist-timeout", str(int(JOIN_WAIT_S / testing.DEFAULT_TIME_SCALE))]
        self.init_addr = f"127.0.0.1:{testing.free_port()}"
        self.started: list[testing.SimProcess] = []

    def start(self, rank: int, env: dict[str, str] | None = None) -> testing.SimProcess:
        args = ["--model-path", str(self.target), "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
                "--dist-init-addr", self.init_addr, *self.extra]
        sim = testing.start(args, log_path=self.tmp_path / f"rank{rank}.log", env={**LOAD, **(env or {})})
        self.started.append(sim)
        return sim

    def stop_all(self) -> None:
        for sim in self.started:
            if sim.proc.poll() is None:
                sim.proc.kill()
                sim.proc.wait(5)


@pytest.fixture
def pair(tmp_path: Path, target: Path):
    made: list[Pair] = []

    def make(*extra: str) -> Pair:
        made.append(Pair(tmp_path, target, *extra))
        return made[-1]

    yield make
    for one in made:
        one.stop_all()


def wait_exit(sim: testing.SimProcess, timeout: float = 60.0) -> int:
    return int(sim.proc.wait(timeout))


def test_rank_0_is_ready_only_once_every_node_joined(pair) -> None:
    nodes = pair("--dist-timeout", "60000")
    rank0 = nodes.start(0)
    rank0.wait_status("/health", 503)  # the API is bound, the model is not loaded: no world yet
    time.sleep(0.8)  # far longer than the load would take alone
    assert rank0.status("/health") == 503
    assert "Load weight begin" not in rank0.log()
    rank1 = nodes.start(1)
    rank0.wait_ready()
    rank1.wait_status("/health", 200)
    assert "node_rank 1 joined the process group (2/2 nodes)" in rank0.log()
    # rank 0 serves the API; the follower only SGLang's dummy health server (srt/utils/common.py)
    assert httpx.get(rank0.url + "/model_info").status_code == 200
    assert httpx.get(rank1.url + "/model_info").status_code == 404
    for path in ("/health", "/health_generate", "/ping"):
        assert rank1.status(path) == 200


def test_a_follower_ignores_sigterm_until_rank_0_exits(pair) -> None:
    nodes = pair()
    rank0, rank1 = nodes.start(0), nodes.start(1)
    rank0.wait_ready()
    rank1.wait_status("/health", 200)
    rank1.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert rank1.proc.poll() is None
    assert rank1.status("/health") == 200
    assert "SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast" in rank1.log()
    assert rank0.stop() == 0
    assert wait_exit(rank1) == 0


def test_a_follower_not_yet_ready_stops_on_sigterm(pair) -> None:
    nodes = pair()
    rank1 = nodes.start(1)  # rank 0 never started: still trying to join
    deadline = time.monotonic() + 45  # a node process starting (imports, model files) on a machine at load 8
    while "Init parallel begin." not in rank1.log():
        assert time.monotonic() < deadline, rank1.log()
        time.sleep(0.02)
    assert rank1.proc.poll() is None
    assert rank1.stop(timeout=5) == 0


def test_the_gated_launch_waits_for_every_node_then_for_activation(pair) -> None:
    gate_port = testing.free_port()
    gate = f"http://127.0.0.1:{gate_port}"
    nodes = pair("--gated-launch-port", str(gate_port))
    rank0 = nodes.start(0)
    rank0.wait_status("/health", 503)
    time.sleep(0.3)
    with pytest.raises(httpx.ConnectError):  # the control server starts only after every node joined
        httpx.get(gate + "/health")
    rank1 = nodes.start(1)
    deadline = time.monotonic() + 45  # a node process starting (imports, model files) on a machine at load 8
    while True:
        try:
            answer = httpx.get(gate + "/health")
            break
        except httpx.ConnectError:
            assert time.monotonic() < deadline, rank0.log()
            time.sleep(0.02)
    assert (answer.status_code, answer.text) == (200, "OK")
    time.sleep(0.6)  # every rank blocks until activated: nothing loads
    assert rank0.status("/health") == 503
    assert rank1.status("/health") is None
    assert "Load weight begin" not in rank0.log() + rank1.log()
    activated = httpx.post(gate + "/gate/activate")
    assert (activated.status_code, activated.text) == (200, "OK")
    rank0.wait_ready()
    rank1.wait_status("/health", 200)
    assert httpx.get(gate + "/health").text == "OK"  # the control server stays up


def test_a_gated_single_node_server_waits_for_activation_too(tmp_path: Path, target: Path) -> None:
    gate_port = testing.free_port()
    sim = testing.start(["--model-path", str(target), "--gated-launch-port", str(gate_port)],
                        log_path=tmp_path / "single.log", env=LOAD)
    try:
        sim.wait_status("/health", 503)
        time.sleep(0.5)
        assert sim.status("/health") == 503
        httpx.post(f"http://127.0.0.1:{gate_port}/gate/activate")
        sim.wait_ready()
    finally:
        assert sim.stop() == 0


def test_a_follower_that_never_joins_fails_both_nodes_after_the_dist_timeout(pair) -> None:
    nodes = pair("--dist-timeout", "1500")  # 1.5 s at the tests' time scale
    rank0 = nodes.start(0)
    rank1 = nodes.start(1, {"SPECGATE_SIM_FAULT_NEVER_JOIN": "1"})
    started = time.monotonic()
    assert wait_exit(rank0) == 1
    assert wait_exit(rank1) == 1
    assert time.monotonic() - started >= 1.0
    assert "Timed out after 1500 seconds waiting for clients. 1/2 clients joined." in rank0.log()
    assert "The client socket has timed out after 1500000ms while trying to connect to (127.0.0.1," in rank1.log()
    assert "FAULT_NEVER_JOIN" in rank1.log()


def test_a_follower_that_crashes_during_the_load_leaves_rank_0_unhealthy_until_the_watchdog(pair) -> None:
    nodes = pair("--dist-timeout", "1500")
    rank0 = nodes.start(0, {"SPECGATE_SIM_LOAD_SECONDS": "1000"})
    rank1 = nodes.start(1, {"SPECGATE_SIM_LOAD_SECONDS": "1000", "SPECGATE_SIM_FAULT_CRASH_AFTER_JOIN_SECONDS": "200"})
    assert wait_exit(rank1) == 1
    assert "node_rank 1 crashed" in rank1.log()
    assert "torch.OutOfMemoryError" in rank1.log()
    statuses = set()
    while rank0.proc.poll() is None:
        statuses.add(rank0.status("/health"))
        time.sleep(0.02)
    assert 200 not in statuses
    assert rank0.proc.returncode == 1
    assert "node_rank 1 closed its connection to the process group" in rank0.log()
    assert "Watchdog caught collective operation timeout" in rank0.log()


def test_a_follower_that_crashes_after_coming_up_turns_rank_0_unhealthy(pair) -> None:
    nodes = pair("--dist-timeout", "60000")
    rank0 = nodes.start(0)
    rank1 = nodes.start(1, {"SPECGATE_SIM_FAULT_CRASH_AFTER_JOIN_SECONDS": "800"})
    rank0.wait_ready()
    assert wait_exit(rank1) == 1
    rank0.wait_status("/health", 503)
    assert rank0.stop() == 0


def test_a_world_that_does_not_split_over_the_nodes_is_refused_as_sglang_does(tmp_path: Path, target: Path) -> None:
    args = ["--model-path", str(target), "--tp-size", "3", "--nnodes", "2", "--node-rank", "0",
            "--dist-init-addr", f"127.0.0.1:{testing.free_port()}"]
    sim = testing.start(args, log_path=tmp_path / "bad.log", env=LOAD)
    assert wait_exit(sim) == 1
    assert "tp_size must be divisible by number of nodes" in sim.log()


def test_rank_0_stopped_before_the_world_is_ready_takes_its_followers_down(pair) -> None:
    # a rollback while the gate is still closed: rank 0 exits cleanly, a follower in the gate loses its process group
    gate_port = testing.free_port()
    nodes = pair("--gated-launch-port", str(gate_port))
    rank0, rank1 = nodes.start(0), nodes.start(1)
    deadline = time.monotonic() + 45  # a node process starting (imports, model files) on a machine at load 8
    while "node_rank 1 joined" not in rank0.log():
        assert time.monotonic() < deadline, rank0.log()
        time.sleep(0.02)
    assert rank0.stop() == 0
    assert wait_exit(rank1) == 1
    assert "rank 0 closed the process group before the engine was ready" in rank1.log()
