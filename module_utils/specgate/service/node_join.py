"""Whether a node of a multi-node deployment has joined rank 0's rendezvous, read from the kernel's socket table.

A node joins by connecting to rank 0's --dist-init-addr (torch.distributed's TCPStore, which rank 0 hosts there) and
keeps that connection for the process group's life: c10d's TCPStore client holds one socket to the store per process.
So a node whose engine processes hold no ESTABLISHED TCP connection to that address has not joined (a firewall, a
wrong address, a node still waiting to start), and one that dropped it has left. Read from /proc (net/tcp, net/tcp6
and each process's fd links), which every Linux has, for the unit's own processes only: another process talking to
the same address proves nothing about this node (where its fd links cannot be read, the unit's own service user
owning the socket stands in).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TCP_ESTABLISHED = 0x01  # include/net/tcp_states.h
_LITTLE_ENDIAN = sys.byteorder == "little"


@dataclass(frozen=True)
class TcpSocket:
    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    inode: int
    uid: int = -1


def _address(hex_address: str) -> tuple[str, int]:
    """/proc/net/tcp's "0100007F:1F90" (IPv4) or 32-hex-digit IPv6 form, each 32-bit word in host byte order."""
    hex_ip, hex_port = hex_address.split(":")
    raw = bytes.fromhex(hex_ip)
    # The kernel prints each 32-bit word of the address as a native-endian integer.
    words = [raw[i:i + 4][::-1] if _LITTLE_ENDIAN else raw[i:i + 4] for i in range(0, len(raw), 4)]
    packed = b"".join(words)
    ip = ipaddress.ip_address(packed)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(hex_port, 16)


def parse_proc_net_tcp(text: str) -> list[TcpSocket]:
    """The sockets of one /proc/net/tcp or /proc/net/tcp6 table (its header line skipped)."""
    sockets: list[TcpSocket] = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        try:
            sockets.append(TcpSocket(_address(fields[1]), _address(fields[2]), int(fields[3], 16), int(fields[9]),
                                     int(fields[7])))
        except ValueError:
            continue
    return sockets


def socket_inodes(pids: Iterable[int], proc: str = "/proc") -> set[int]:
    """The socket inodes the processes hold open (their fd links read "socket:[N]")."""
    inodes: set[int] = set()
    for pid in pids:
        fd_dir = Path(proc) / str(pid) / "fd"
        try:
            entries = list(fd_dir.iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for entry in entries:
            try:
                target = os.readlink(entry)
            except OSError:
                continue
            if target.startswith("socket:[") and target.endswith("]"):
                inodes.add(int(target[8:-1]))
    return inodes


def resolve(host: str) -> set[str]:
    """Every address `host` resolves to (an address stays itself); empty when it does not resolve."""
    try:
        return {str(ipaddress.ip_address(info[4][0].split("%")[0])) for info in socket.getaddrinfo(host, None)}
    except (OSError, ValueError):
        return set()


def joined(sockets: Iterable[TcpSocket], inodes: set[int], addresses: set[str], port: int,
           uid: int | None = None) -> bool:
    """Whether one of the processes' sockets is ESTABLISHED to one of `addresses` at `port`. Root may be unable to
    read another user's fd links (in a container without CAP_SYS_PTRACE), so a socket owned by `uid` (the unit's
    dedicated service user) counts too: nothing else runs as that user."""
    return any(
        s.state == TCP_ESTABLISHED and s.remote[1] == port and s.remote[0] in addresses
        and (s.inode in inodes or (uid is not None and s.uid == uid))
        for s in sockets
    )


def read_tables(proc: str = "/proc") -> list[TcpSocket]:
    sockets: list[TcpSocket] = []
    for table in ("net/tcp", "net/tcp6"):
        try:
            sockets.extend(parse_proc_net_tcp((Path(proc) / table).read_text()))
        except OSError:  # no IPv6 on this host
            continue
    return sockets
