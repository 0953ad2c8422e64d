"""Find a systemd unit's processes and wait until they, and the port they served, are gone.

``systemctl stop`` returns once systemd considers the unit stopped, but a process that left the
unit's cgroup, or a server started by hand on the same port, would still answer requests: the
restart then talks to the old server. So the stop is proven, not assumed.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd")


def parse_systemctl_show(text: str) -> dict[str, str]:
    """``systemctl show -p A -p B`` prints ``A=value`` lines; values may contain '='."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


class SystemctlShowError(RuntimeError):
    """``systemctl show`` failed; the message says for which unit and why."""


def show_unit(
    run_command: Callable[[list[str]], tuple[int, str, str]], unit: str, properties: Sequence[str]
) -> dict[str, str]:
    """The unit's ``properties`` as ``systemctl show`` reports them (run through ``run_command``, e.g. a module's)."""
    argv = ["systemctl", "show", unit]
    for name in properties:
        argv += ["-p", name]
    rc, out, err = run_command(argv)
    if rc != 0:
        raise SystemctlShowError(f"systemctl show {unit} failed: {err.strip() or out.strip()}")
    return parse_systemctl_show(out)


RUNNING_STATES = ("active", "activating", "reloading", "deactivating")


def stop_is_needed(props: dict[str, str]) -> bool:
    """Whether ``systemctl stop`` must be sent to the unit ``props`` (``systemctl show``) describes.

    Every loaded unit is stopped, even one that looks inactive: while systemd carries out an automatic
    restart (Restart=on-failure after a crash), the unit passes through ``inactive`` with a start job
    queued, and only a stop cancels that job. Skipping the stop there let a crashed candidate's restart
    start the engine beside the rollback's own start. Stopping an inactive unit changes nothing.
    """
    return props.get("LoadState", "loaded") not in ("not-found", "masked")


def was_running(props: dict[str, str]) -> bool:
    """Whether the unit was serving, starting or about to restart (what a stop changes)."""
    return props.get("ActiveState", "") in RUNNING_STATES or props.get("SubState", "") == "auto-restart"


def cgroup_pids(control_group: str, roots: Iterable[str] = CGROUP_ROOTS) -> set[int]:
    """PIDs in the unit's cgroup (and its sub-cgroups), on cgroup v2, hybrid or v1 layouts."""
    if not control_group:
        return set()
    pids: set[int] = set()
    for root in roots:
        base = Path(root) / control_group.lstrip("/")
        if not base.is_dir():
            continue
        for procs in base.rglob("cgroup.procs"):
            try:
                pids.update(int(tok) for tok in procs.read_text().split())
            except OSError:
                continue
    return pids


def descendants(root_pids: Iterable[int], proc: str = "/proc") -> set[int]:
    """Every live descendant of ``root_pids`` (read from /proc/<pid>/stat's ppid field)."""
    parent_of: dict[int, int] = {}
    for entry in Path(proc).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # comm may contain spaces and parentheses: the fields after the last ')' are fixed.
        fields = stat.rsplit(")", 1)[-1].split()
        parent_of[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {int(pid) for pid in root_pids}
    while frontier:
        children = {pid for pid, ppid in parent_of.items() if ppid in frontier and pid not in found}
        found |= children
        frontier = children
    return found


def pid_alive(pid: int, proc: str = "/proc") -> bool:
    """True while the PID exists and is not a zombie (a zombie holds no memory, GPU or host)."""
    try:
        stat = (Path(proc) / str(pid) / "stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X")


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@dataclass
class GoneResult:
    gone: bool
    waited_s: float
    killed: list[int] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    port_free: bool = True

    def as_dict(self) -> dict:
        return {
            "gone": self.gone,
            "waited_s": round(self.waited_s, 3),
            "killed": sorted(self.killed),
            "survivors": sorted(self.survivors),
            "port_free": self.port_free,
        }


def wait_until_gone(
    pids: Iterable[int],
    *,
    timeout: float,
    kill_grace: float = 10.0,
    port: int | None = None,
    host: str = "127.0.0.1",
    interval: float = 0.2,
    alive: Callable[[int], bool] = pid_alive,
    listening: Callable[[int, str], bool] = port_open,
    kill: Callable[[int, int], None] = os.kill,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GoneResult:
    """Wait up to ``timeout`` s for ``pids`` to exit and ``port`` to stop accepting; SIGKILL survivors.

    A survivor at the deadline is killed (SIGKILL cannot be ignored) and given ``kill_grace`` s more.
    The port check catches a server we did not start (or one outside the unit's cgroup): it cannot be
    killed by PID from here, so a port still answering is reported, never ignored.
    """
    watched = {int(pid) for pid in pids}
    start = clock()
    killed: list[int] = []
    deadline = start + timeout
    while True:
        living = sorted(pid for pid in watched if alive(pid))
        port_busy = port is not None and listening(port, host)
        now = clock()
        if not living and not port_busy:
            return GoneResult(gone=True, waited_s=now - start, killed=killed)
        if now >= deadline:
            if living and not killed:
                for pid in living:
                    try:
                        kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    except ProcessLookupError:
                        continue
                deadline = now + kill_grace
                continue
            return GoneResult(
                gone=False, waited_s=now - start, killed=killed, survivors=living, port_free=not port_busy
            )
        sleep(min(interval, max(deadline - now, 0.0)))
