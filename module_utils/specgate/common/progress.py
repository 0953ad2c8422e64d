"""A progress report a long-running module writes to a file while it works, for the play to print on each poll.

An Ansible module cannot stream output: the job runs async, a thread here rewrites a small JSON report (with a
human `line`) every few seconds, and the controller's specgate_follow_job action prints that line per poll.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

# A progress report is a few hundred bytes; a log is read from its end only.
REPORT_MAX_BYTES = 65536
LOG_TAIL_BYTES = 4096


def progress_line(content: bytes | None) -> str | None:
    """The `line` of a progress report (the file's bytes), or None while the job has not written one yet."""
    if not content:
        return None
    try:
        return json.loads(content)["line"]
    except (ValueError, KeyError, TypeError):  # a report caught mid-write or of another shape: skip this round
        return None


def last_log_line(content: bytes | None, tail_bytes: int = LOG_TAIL_BYTES) -> str | None:
    """The last complete, non-empty line of a command's log (the file's bytes, or its tail), None before the first
    one: a tool that prints its own progress (debootstrap's "I: Retrieving ...", podman's "Copying blob") is
    followed through the log its output goes to. A line still being written is left for the next round."""
    if not content:
        return None
    text = content[-tail_bytes:].decode("utf-8", "replace")
    complete = text[: text.rfind("\n") + 1] if "\n" in text else ""
    lines = [line.strip() for line in complete.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1] if lines else None


# The first round of a follow: its first line is printed within a second.
FIRST_POLL_S = 0.5


def poll_delays(interval: float, first: float = FIRST_POLL_S) -> Iterator[float]:
    """The rounds of a follow: doubling from `first` up to `interval`, then `interval` for good.

    Each round waits on the host (specgate_job_wait) and ends the moment the job does, so a round's length sets only
    how often a line is printed and the controller looks at what else may end the wait (a follower's failure): the
    first lines come within seconds, and a long job (a 550 GB download) is asked no more often than the interval
    says, plus log2(interval / first) rounds."""
    delay = min(first, interval)
    while True:
        yield delay
        delay = min(delay * 2, interval)


def format_duration(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def write_json_atomic(path: str, data: dict[str, Any]) -> None:
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".progress.", dir=directory)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


class ProgressWriter:
    """Writes a progress report every `interval` seconds from a daemon thread until stopped."""

    def __init__(self, path: str, measure: Callable[[], dict[str, Any]], interval: float = 2.0) -> None:
        self._path = path
        self._measure = measure
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="specgate-progress", daemon=True)

    def start(self) -> None:
        self.write()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)
        self.write(final=True)

    def write(self, final: bool = False) -> None:
        report = self._measure()
        report.update({"final": final, "updated_at": time.time()})
        write_json_atomic(self._path, report)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.write()
