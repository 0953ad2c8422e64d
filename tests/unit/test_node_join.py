"""Whether a node joined rank 0's rendezvous: /proc/net/tcp parsed as the kernel prints it, and real sockets of this
process read back through /proc (a connection held, one to another port, one closed)."""

from __future__ import annotations

import os
import socket
import sys

import pytest
from ansible.module_utils.specgate.service.node_join import (
    TCP_ESTABLISHED,
    TcpSocket,
    joined,
    parse_proc_net_tcp,
    read_tables,
    resolve,
    socket_inodes,
)

pytestmark = pytest.mark.host

# Two lines of a real /proc/net/tcp (little-endian host): a listener on 127.0.0.1:25000 and a connection from
# 127.0.0.1:41170 to 10.0.0.11:25000.
HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
TABLE = HEADER + (
    "   0: 0100007F:61A8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 "
    "0000000000000000 100 0 0 10 0\n"
    "   1: 0100007F:A0D2 0B00000A:61A8 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 "
    "0000000000000000 20 4 30 10 -1\n"
)


@pytest.mark.skipif(sys.byteorder != "little", reason="the sample table is a little-endian host's")
def test_the_kernel_table_reads_as_addresses_ports_states_and_inodes():
    listener, connection = parse_proc_net_tcp(TABLE)
    assert listener == TcpSocket(("127.0.0.1", 25000), ("0.0.0.0", 0), 0x0A, 4242, 0)
    assert connection == TcpSocket(("127.0.0.1", 41170), ("10.0.0.11", 25000), TCP_ESTABLISHED, 4343, 1000)


def test_joined_needs_an_established_socket_of_the_node_to_the_rendezvous():
    sockets = [TcpSocket(("10.0.0.12", 41106), ("10.0.0.11", 25000), TCP_ESTABLISHED, 7),
               TcpSocket(("10.0.0.12", 41107), ("10.0.0.11", 25000), 0x02, 8),  # SYN_SENT: still trying
               TcpSocket(("10.0.0.12", 41108), ("10.0.0.11", 30000), TCP_ESTABLISHED, 9)]
    assert joined(sockets, {7}, {"10.0.0.11"}, 25000)
    assert not joined(sockets, {8}, {"10.0.0.11"}, 25000)  # a connection attempt is not a join
    assert not joined(sockets, {9}, {"10.0.0.11"}, 25000)  # another port of rank 0
    assert not joined(sockets, {99}, {"10.0.0.11"}, 25000)  # another process's connection
    assert not joined(sockets, {7}, {"10.0.0.99"}, 25000)


def test_where_fd_links_cannot_be_read_the_service_users_socket_stands_in():
    sockets = [TcpSocket(("10.0.0.12", 41106), ("10.0.0.11", 25000), TCP_ESTABLISHED, 7, 997),
               TcpSocket(("10.0.0.12", 41107), ("10.0.0.11", 30000), TCP_ESTABLISHED, 8, 997)]
    assert joined(sockets, set(), {"10.0.0.11"}, 25000, uid=997)
    assert not joined(sockets, set(), {"10.0.0.11"}, 25000, uid=998)  # another user's connection
    assert not joined(sockets, set(), {"10.0.0.11"}, 25000)
    assert not joined(sockets[1:], set(), {"10.0.0.11"}, 25000, uid=997)  # the service user, another port


def test_a_connection_this_process_holds_is_read_back_through_proc_and_gone_once_closed():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    try:
        inodes = socket_inodes([os.getpid()])
        assert joined(read_tables(), inodes, resolve("127.0.0.1"), port)
        assert not joined(read_tables(), inodes, resolve("127.0.0.1"), port + 1 if port < 65535 else port - 1)
    finally:
        client.close()
        accepted.close()
        server.close()
    assert not joined(read_tables(), socket_inodes([os.getpid()]), {"127.0.0.1"}, port)


def test_a_name_resolves_to_its_addresses_and_an_address_to_itself():
    assert resolve("127.0.0.1") == {"127.0.0.1"}
    assert "127.0.0.1" in resolve("localhost")
    assert resolve("no-such-host.invalid") == set()
