"""How the nodes of one multi-node deployment tell each other, on the controller, that a restart ended.

Ansible runs a task on every node at once (one controller worker per host), and a worker cannot read another's
results until the task ends. A follower that crashes during the load must stop rank 0's wait at once (rank 0 would
otherwise hang in its next collective until NCCL's watchdog fires, sgl-project/sglang#3099), and rank 0's verdict
must end the followers' watches. So each node's worker writes its outcome as a small JSON file in a directory on the
controller that every node of the restart names the same way, and reads the others' there between polls.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

READY = "ready"
FAILED = "failed"


@dataclass(frozen=True)
class Signal:
    host: str
    rank: int
    outcome: str  # READY or FAILED
    message: str = ""


def signal_dir(base: str, group: str, restart_id: str) -> Path:
    """The restart's directory under `base`: one per group and restart (rank 0's start job id names the restart)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{group}-{restart_id}")
    return Path(base) / f"specgate-nodes-{safe}"


def write_signal(directory: Path, signal: Signal) -> None:
    """Written whole or not at all: a reader never sees half a file."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(dir=directory, prefix=".staging-")
    with os.fdopen(fd, "w") as handle:
        json.dump(signal.__dict__, handle)
    os.replace(staging, directory / f"rank{signal.rank}.json")


def read_signals(directory: Path) -> list[Signal]:
    signals: list[Signal] = []
    if not directory.is_dir():
        return signals
    for path in sorted(directory.glob("rank*.json")):
        try:
            raw = json.loads(path.read_text())
            signals.append(Signal(str(raw["host"]), int(raw["rank"]), str(raw["outcome"]), str(raw.get("message", ""))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return signals


def failed_follower(signals: list[Signal]) -> Signal | None:
    """The first follower (lowest rank) that reported a failure: what ends rank 0's wait."""
    failed = sorted((s for s in signals if s.rank > 0 and s.outcome == FAILED), key=lambda s: s.rank)
    return failed[0] if failed else None


def leader_outcome(signals: list[Signal]) -> Signal | None:
    """Rank 0's outcome once it has one: what ends a follower's watch."""
    return next((s for s in signals if s.rank == 0), None)
