"""Who holds a port, from /proc: fixtures for the parsing, and a real listening socket for the whole path."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from ansible.module_utils.specgate.service.port_owners import listening_sockets, port_holders, socket_holders

pytestmark = pytest.mark.host

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"


def _fake_proc(tmp_path: Path, tcp: str, tcp6: str = "", fds: dict[int, tuple[str, list[str]]] | None = None) -> Path:
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text(HEADER + tcp)
    (proc / "net" / "tcp6").write_text(HEADER + tcp6)
    for pid, (comm, links) in (fds or {}).items():
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
        for number, target in enumerate(links):
            os.symlink(target, proc / str(pid) / "fd" / str(number))
    return proc


# 30001 = 0x7531; state 0A = LISTEN, 01 = ESTABLISHED.
LISTEN_30001 = "   0: 0100007F:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 4242 1\n"
ESTABLISHED_30001 = "   1: 0100007F:7531 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  0  0 4343 1\n"
LISTEN6_30001 = (
    "   0: 00000000000000000000000000000000:7531 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000   996        0 4444 1\n"
)


def test_only_listening_sockets_on_the_port_count_ipv4_and_ipv6(tmp_path):
    proc = _fake_proc(tmp_path, LISTEN_30001 + ESTABLISHED_30001, LISTEN6_30001)
    assert listening_sockets(30001, str(proc)) == {4242: 0, 4444: 996}
    assert listening_sockets(30002, str(proc)) == {}


def test_holders_are_found_through_their_fd_links(tmp_path):
    proc = _fake_proc(
        tmp_path, LISTEN_30001, fds={77: ("python3", ["/dev/null", "socket:[4242]"]), 78: ("bash", ["socket:[9]"])}
    )
    assert socket_holders({4242}, str(proc)) == {77: ("python3", 4242)}


def test_a_holder_in_the_unit_is_told_apart_from_a_stranger(tmp_path):
    proc = _fake_proc(tmp_path, LISTEN_30001, LISTEN6_30001, fds={77: ("python3", ["socket:[4242]"]),
                                                                   90: ("nginx", ["socket:[4444]"])})
    assert port_holders(30001, {77}, proc=str(proc)) == [
        {"pid": 77, "name": "python3", "uid": 0, "in_unit": True},
        {"pid": 90, "name": "nginx", "uid": 996, "in_unit": False},
    ]


def test_a_listener_whose_holder_cannot_be_seen_is_judged_by_the_sockets_owner(tmp_path):
    # Root in a container without CAP_SYS_PTRACE cannot read the service user's fd links.
    proc = _fake_proc(tmp_path, "", LISTEN6_30001)
    hidden = {"pid": 0, "name": "a process of uid 996 not visible in /proc", "uid": 996}
    assert port_holders(30001, {77}, unit_uid=996, proc=str(proc)) == [{**hidden, "in_unit": True}]
    assert port_holders(30001, {77}, unit_uid=995, proc=str(proc)) == [{**hidden, "in_unit": False}]
    assert port_holders(30001, {77}, proc=str(proc)) == [{**hidden, "in_unit": False}]


def test_a_free_port_has_no_holders(tmp_path):
    assert port_holders(30001, set(), proc=str(_fake_proc(tmp_path, ESTABLISHED_30001))) == []


def test_this_process_is_found_listening_on_a_real_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        holders = port_holders(port, {os.getpid()})
    me = {"pid": os.getpid(), "name": Path("/proc/self/comm").read_text().strip(), "uid": os.getuid(), "in_unit": True}
    assert me in holders
