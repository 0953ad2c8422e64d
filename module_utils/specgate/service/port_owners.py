"""Who listens on a TCP port, read from /proc: the restart protocol asks before it stops anything.

A candidate whose port another process holds cannot start; found only after the old server was stopped, that
is an outage. Read while the old server still runs, the holders tell the two cases apart: the unit's own server
(it will be stopped) or a stranger (refuse the switch, name it, stop nothing).
"""

from __future__ import annotations

import os
from pathlib import Path

TCP_LISTEN = "0A"


def listening_sockets(port: int, proc: str = "/proc") -> dict[int, int]:
    """Socket inode → owner uid of every socket in LISTEN on ``port``, any address, IPv4 and IPv6."""
    sockets: dict[int, int] = {}
    for table in ("tcp", "tcp6"):
        path = Path(proc) / "net" / table
        try:
            lines = path.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != TCP_LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                sockets[int(fields[9])] = int(fields[7])
    return sockets


def socket_holders(inodes: set[int], proc: str = "/proc") -> dict[int, tuple[str, int]]:
    """PID → (command name, socket inode) of every process with one of ``inodes`` open (its /proc/<pid>/fd
    links). Another user's fd links need CAP_SYS_PTRACE (root on a host has it, root in a container may not):
    those holders are simply not found here."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    holders: dict[int, tuple[str, int]] = {}
    if not wanted:
        return holders
    for entry in Path(proc).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                inode = wanted.get(os.readlink(fd))
                if inode is not None:
                    holders[int(entry.name)] = ((entry / "comm").read_text().strip(), inode)
                    break
            except OSError:
                continue
    return holders


def port_holders(port: int, unit_pids: set[int], unit_uid: int | None = None, proc: str = "/proc") -> list[dict]:
    """Every listener on ``port``: ``{pid, name, uid, in_unit}``.

    A holder found through /proc is the unit's when its PID is one of ``unit_pids``. A listening socket whose
    holder cannot be read is judged by its owner: the unit's when it belongs to ``unit_uid`` (the service user,
    a dedicated account), reported with pid 0 either way.
    """
    sockets = listening_sockets(port, proc)
    holders = socket_holders(set(sockets), proc)
    found = [
        {"pid": pid, "name": name, "uid": sockets[inode], "in_unit": pid in unit_pids}
        for pid, (name, inode) in sorted(holders.items())
    ]
    seen = {inode for _, inode in holders.values()}
    for inode, uid in sorted(sockets.items()):
        if inode not in seen:
            found.append({"pid": 0, "name": f"a process of uid {uid} not visible in /proc", "uid": uid,
                          "in_unit": unit_uid is not None and uid == unit_uid})
    return found
