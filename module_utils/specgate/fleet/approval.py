"""A person's approval between the batches of a rollout (fleet_rollout_pause_between_batches).

The rollout waits on the controller for a file in the rollout's report directory, written by whoever read the
report: ``approve-batch-<N>`` starts batch N, ``stop`` ends the rollout where it is. A file, not a prompt: a run from
CI, AWX or a detached shell has no terminal to answer a prompt on (Ansible's pause then goes on without waiting), and
a stale approval of another batch never starts this one. While it waits, ``waiting-batch-<N>`` in the same
directory says so (for a person's tools, and so nobody approves a batch nothing waits for); it is gone once the wait
ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

APPROVED = "approved"
STOPPED = "stopped"
TIMED_OUT = "timed out"


def approve_file(reports_dir: str, batch_number: int) -> Path:
    return Path(reports_dir) / f"approve-batch-{int(batch_number)}"


def stop_file(reports_dir: str) -> Path:
    return Path(reports_dir) / "stop"


def waiting_file(reports_dir: str, batch_number: int) -> Path:
    return Path(reports_dir) / f"waiting-batch-{int(batch_number)}"


def instructions(reports_dir: str, batch_number: int, hosts: list[str], timeout: int) -> str:
    """What the person is asked, with the exact commands."""
    return (
        f"Waiting up to {int(timeout)} s for a person to approve batch {int(batch_number)} "
        f"({', '.join(hosts)}). Read {Path(reports_dir) / 'fleet.md'}, then on this controller: "
        f"touch {approve_file(reports_dir, batch_number)} to start it, or touch {stop_file(reports_dir)} to stop here."
    )


@dataclass(frozen=True)
class Decision:
    decision: str  # approved, stopped, timed out
    waited_s: float
    message: str


def wait_for_approval(reports_dir: str, batch_number: int, timeout: float, poll: float = 1.0, *,
                      clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> Decision:  # fmt: skip
    """Wait until batch ``batch_number`` is approved or the rollout is stopped, at most ``timeout`` seconds. A stop
    wins over an approval written at the same time."""
    started = clock()
    approve, stop = approve_file(reports_dir, batch_number), stop_file(reports_dir)
    waiting = waiting_file(reports_dir, batch_number)
    waiting.parent.mkdir(parents=True, exist_ok=True)
    waiting.write_text(f"waiting up to {timeout:.0f} s for {approve.name} or {stop.name}\n")
    try:
        return _wait(batch_number, timeout, poll, approve=approve, stop=stop, started=started, clock=clock,
                     sleep=sleep)
    finally:
        waiting.unlink(missing_ok=True)


def _wait(batch_number: int, timeout: float, poll: float, *, approve: Path, stop: Path, started: float,
          clock: Callable[[], float], sleep: Callable[[float], None]) -> Decision:  # fmt: skip
    while True:
        waited = clock() - started
        if stop.exists():
            return Decision(STOPPED, waited, f"Rollout stopped before batch {batch_number}: {stop} was written.")
        if approve.exists():
            return Decision(APPROVED, waited, f"Batch {batch_number} approved ({approve}) after {waited:.0f} s.")
        if waited >= timeout:
            return Decision(TIMED_OUT, waited, (
                f"Rollout stopped before batch {batch_number}: nobody approved it within {timeout:.0f} s "
                f"(fleet_rollout_pause_timeout; {approve} was never written)."))  # fmt: skip
        sleep(min(poll, max(timeout - waited, 0.01)))
