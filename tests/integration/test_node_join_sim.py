"""The join check and the gate client against real processes of a two-node pair (the sim joins rank 0's rendezvous
over TCP as torch.distributed's store clients do): a follower that joined holds a connection to --dist-init-addr, one
that never gets through holds none, and the gated launch opens with the client sglang_service_start uses."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ansible.module_utils.specgate.service.node_join import joined, read_tables, resolve, socket_inodes
from ansible.module_utils.specgate.service.readiness import http_post, probe_health
from ansible.module_utils.specgate.service.unit_processes import descendants
from specgate_sim import testing

LOAD = {"SPECGATE_SIM_START_SECONDS": "0", "SPECGATE_SIM_LOAD_SECONDS": "1", "SPECGATE_SIM_WARMUP_SECONDS": "0"}


def start(tmp_path: Path, target: Path, rank: int, ports: tuple[int, int], env: dict | None = None):
    init_port, gate_port = ports
    args = ["--model-path", str(target), "--tp-size", "2", "--nnodes", "2", "--node-rank", str(rank),
            "--dist-init-addr", f"127.0.0.1:{init_port}", "--gated-launch-port", str(gate_port),
            "--dist-timeout", "600"]
    return testing.start(args, log_path=tmp_path / f"rank{rank}.log", env={**LOAD, **(env or {})})


def node_joined(sim, port: int) -> bool:
    pids = {sim.proc.pid} | descendants([sim.proc.pid])
    return joined(read_tables(), socket_inodes(pids), resolve("127.0.0.1"), port)


def wait_for(predicate, timeout: float = 60.0) -> bool:
    """Await the predicate; the bound only ends a failure (two sims start on a machine that may be at load 8)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG, weight_bytes=1 << 20)


def test_a_joined_follower_holds_the_rendezvous_and_the_gate_opens_with_our_client(tmp_path, target):
    init_port, gate_port = testing.free_port(), testing.free_port()
    rank0 = start(tmp_path, target, 0, (init_port, gate_port))
    rank1 = start(tmp_path, target, 1, (init_port, gate_port))
    try:
        gate = f"http://127.0.0.1:{gate_port}"
        assert wait_for(lambda: probe_health(gate + "/health").status == 200), rank0.log()
        assert node_joined(rank1, init_port)
        assert not node_joined(rank1, gate_port)
        assert http_post(gate + "/gate/activate").status == 200
        rank0.wait_ready()
        assert node_joined(rank1, init_port)  # held for the process group's life
    finally:
        for sim in (rank0, rank1):
            sim.proc.kill()
            sim.proc.wait(5)
    assert not node_joined(rank1, init_port)


def test_a_follower_that_never_gets_through_holds_no_connection_and_the_gate_stays_shut(tmp_path, target):
    init_port, gate_port = testing.free_port(), testing.free_port()
    rank0 = start(tmp_path, target, 0, (init_port, gate_port))
    rank1 = start(tmp_path, target, 1, (init_port, gate_port), {"SPECGATE_SIM_FAULT_NEVER_JOIN": "1"})
    try:
        assert wait_for(lambda: "never reaches rank 0" in rank1.log())
        time.sleep(0.5)
        assert not node_joined(rank1, init_port)
        assert probe_health(f"http://127.0.0.1:{gate_port}/health").status is None
    finally:
        for sim in (rank0, rank1):
            sim.proc.kill()
            sim.proc.wait(5)
