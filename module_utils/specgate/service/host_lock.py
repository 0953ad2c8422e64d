"""The host's change lock: one run at a time may stop, start, gate, promote or roll back the service.

Ansible keeps no process on the host between tasks, so nothing there can hold a kernel lock for a whole run.
The lock is a JSON record instead, written under a short ``flock`` (the guard) so that two runs never both
take it. A record names its holder (controller, user, ansible-playbook PID, playbook) and carries a lease:
the holder renews it at each stage, and a record whose lease ran out belongs to a dead run and may be taken
over. A run on the same controller can tell sooner: the controller checks the holder's PID and hands its
token over as ``takeover`` when that process is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class LockResult:
    acquired: bool
    record: dict[str, Any]  # the record in force: ours when acquired, the holder's otherwise
    waited_s: float = 0.0
    replaced: dict[str, Any] | None = None  # a dead run's record this one took over
    replaced_because: str = ""
    renewed: bool = False  # the lock was already ours: only its lease moved on
    messages: list[str] = field(default_factory=list)


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def lapses_at(record: Mapping[str, Any]) -> float:
    return float(record.get("renewed_epoch", 0)) + float(record.get("lease_s", 0))


def stale_reason(record: Mapping[str, Any], now: float, takeover: str = "") -> str:
    """Why ``record`` belongs to a dead run ("" while its holder may still be working)."""
    if takeover and record.get("token") == takeover:
        return f"its ansible-playbook (PID {record.get('pid')} on {record.get('controller')}) no longer runs"
    if now > lapses_at(record):
        return f"its lease lapsed at {iso(lapses_at(record))} without a renewal"
    return ""


def describe(record: Mapping[str, Any], now: float) -> str:
    """Who holds the lock, since when, and when it lapses: what a waiting user needs to decide."""
    return (
        f"{record.get('user', '?')}@{record.get('controller', '?')} "
        f"(ansible-playbook PID {record.get('pid', '?')}, {record.get('playbook', '?')}) "
        f"since {iso(float(record.get('since_epoch', 0)))}, "
        f"{int(now - float(record.get('since_epoch', now)))} s ago; its lease lapses at {iso(lapses_at(record))} "
        "unless that run renews it"
    )


def read_record(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        # A torn or foreign file is no holder: nothing could have renewed it.
        return {"token": "", "renewed_epoch": 0, "lease_s": 0, "since_epoch": 0, "unreadable": True}
    return record if isinstance(record, dict) else {"token": "", "renewed_epoch": 0, "lease_s": 0}


def _write_record(path: str, record: Mapping[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


@contextmanager
def _guard(path: str) -> Iterator[None]:
    """Serialise read-decide-write between runs; held for milliseconds, never across tasks."""
    fd = os.open(f"{path}.guard", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def try_acquire(path: str, me: Mapping[str, Any], lease_s: int, now: float, takeover: str = "") -> LockResult:
    """One attempt: take a free or dead run's lock, renew our own, or report the live holder."""
    with _guard(path):
        current = read_record(path)
        if current is not None and current.get("token") == me["token"]:
            record = {**current, "renewed_epoch": now, "lease_s": lease_s}
            _write_record(path, record)
            return LockResult(acquired=True, record=record, renewed=True)
        reason = stale_reason(current, now, takeover) if current is not None else ""
        if current is not None and not reason:
            return LockResult(acquired=False, record=current)
        record = {**me, "since_epoch": now, "renewed_epoch": now, "lease_s": lease_s}
        _write_record(path, record)
        return LockResult(acquired=True, record=record, replaced=current, replaced_because=reason)


def acquire(
    path: str,
    me: Mapping[str, Any],
    *,
    lease_s: int,
    timeout_s: float,
    poll_s: float,
    takeover: str = "",
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[Mapping[str, Any], float, float], None] | None = None,
) -> LockResult:
    """Wait up to ``timeout_s`` for the lock; the last result says who still holds it when time ran out.
    ``on_wait(record, waited_s, now)`` is told, at each poll that finds another run holding it, who that is."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o755, exist_ok=True)
    started = clock()
    while True:
        now = clock()
        result = try_acquire(path, me, lease_s, now, takeover)
        if not result.acquired and on_wait is not None and result.record:
            on_wait(result.record, round(now - started, 1), now)
        if result.acquired or now - started >= timeout_s:
            return LockResult(
                acquired=result.acquired,
                record=result.record,
                waited_s=round(now - started, 1),
                replaced=result.replaced,
                replaced_because=result.replaced_because,
                renewed=result.renewed,
            )
        sleep(min(poll_s, max(0.0, timeout_s - (now - started))))


def release(path: str, token: str, force: bool = False) -> tuple[str, dict[str, Any] | None]:
    """Drop the lock if it is ours (or ``force``): "released", "absent" or "held by another run"."""
    with _guard(path):
        current = read_record(path)
        if current is None:
            return "absent", None
        if not force and current.get("token") != token:
            return "held by another run", current
        os.unlink(path)
        return "released", current


def waiting_line(record: Mapping[str, Any], waited_s: float, now: float, timeout_s: float) -> str:
    """The progress line of a run waiting for the lock: who holds it, since when, how long this run waited."""
    return (f"waiting for the change lock, held by {describe(record, now)}; waited {waited_s:.0f} s of "
            f"{timeout_s:.0f} s (sglang_service_lock_timeout)")  # fmt: skip


def timeout_message(record: Mapping[str, Any], path: str, waited_s: float, now: float) -> str:
    return (
        f"The change lock {path} is held by {describe(record, now)}. Waited {waited_s:.0f} s "
        "(sglang_service_lock_timeout) and changed nothing. Fix: wait for that run and re-run; raise "
        "sglang_service_lock_timeout to wait longer; or, if that run is dead, let its lease lapse or break the "
        "lock with playbooks/unlock.yml."
    )
