"""The ports tests bind (testing.free_port): never one an outgoing connection or another test worker can hold."""

from __future__ import annotations

import itertools
import socket

import pytest
from specgate_sim import testing

EPHEMERAL_END = 60999  # the kernel's default ephemeral range ends here; scripts/bootstrap keeps that end
SCENARIO_PORTS = range(30000, 37100)  # CONTRIBUTING.md's port map: the demo and the molecule scenarios


def test_ports_lie_above_the_ephemeral_range_and_apart_from_the_scenarios():
    ports = [testing.free_port() for _ in range(50)]
    assert len(set(ports)) == 50, ports
    assert all(EPHEMERAL_END < port < 65536 and port not in SCENARIO_PORTS for port in ports), ports


@pytest.mark.parametrize("worker", ["gw0", "gw1", "gw7", ""])
def test_each_worker_has_a_block_no_other_shares(monkeypatch, worker):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    mine = set(testing._port_block())
    others = set()
    for other in ["gw0", "gw1", "gw7", ""]:
        if other != worker:
            monkeypatch.setenv("PYTEST_XDIST_WORKER", other)
            others |= set(testing._port_block())
    assert len(mine) >= 400
    assert not mine & others


def test_a_port_still_bound_is_passed_over(monkeypatch):
    block = testing._port_block()
    monkeypatch.setattr(testing, "_next_port", itertools.count(0))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", block[0]))
        held.listen()
        assert testing.free_port() == block[1]


def test_a_block_with_no_free_port_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(testing, "_port_block", lambda: range(61000, 61002))
    monkeypatch.setattr(testing, "_next_port", itertools.count(0))
    with socket.socket() as first, socket.socket() as second:
        first.bind(("127.0.0.1", 61000))
        second.bind(("127.0.0.1", 61001))
        with pytest.raises(RuntimeError, match="61000-61001"):
            testing.free_port()
