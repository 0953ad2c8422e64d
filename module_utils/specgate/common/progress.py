"""A progress report a long-running module writes to a file while it works, for the play to print on each poll.

An Ansible module cannot stream output: the job runs async, a thread here rewrites a small JSON report (with a
human `line`) every few seconds, and the controller's specgate_follow_job action prints that line per poll.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


def progress_line(slurped: dict) -> str | None:
    """The `line` of a progress report as ansible.builtin.slurp returned it, or None while the job has not written
    one yet."""
    if slurped.get("failed") or "content" not in slurped:
        return None
    try:
        return json.loads(base64.b64decode(slurped["content"]))["line"]
    except (ValueError, KeyError, TypeError):  # a report caught mid-write or of another shape: skip this round
        return None


def last_log_line(slurped: dict, tail_bytes: int = 4096) -> str | None:
    """The last complete, non-empty line of a command's log as ansible.builtin.slurp returned it (None before the
    first one): a tool that prints its own progress (debootstrap's "I: Retrieving ...", podman's "Copying blob")
    is followed through the log its output goes to. A line still being written is left for the next round."""
    if slurped.get("failed") or "content" not in slurped:
        return None
    try:
        text = base64.b64decode(slurped["content"])[-tail_bytes:].decode("utf-8", "replace")
    except (ValueError, TypeError):
        return None
    complete = text[: text.rfind("\n") + 1] if "\n" in text else ""
    lines = [line.strip() for line in complete.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1] if lines else None


# The first wait of a follow: a job that ends within a second is seen within a second, not a whole interval later.
FIRST_POLL_S = 0.5


def poll_delays(interval: float, first: float = FIRST_POLL_S) -> Iterator[float]:
    """The waits between a follow's polls: doubling from `first` up to `interval`, then `interval` for good.

    A follow that slept its whole interval before the first look made every short job (an engine load of seconds, one
    benchmark run) last a multiple of the interval; the doubling keeps a long job's polls as sparse as the interval
    says (a 550 GB download polls at most log2(interval / first) more times than before)."""
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
