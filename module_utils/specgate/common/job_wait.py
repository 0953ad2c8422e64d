"""Waiting on the host for an async job to end (specgate_job_wait), so a follow sees the end as it happens.

A follow used to ask ansible.builtin.async_status, sleep on the controller and ask again: every round was two host
calls (the status and the progress report), and a job that ended just after a round was seen only a whole wait
later (a benchmark of 8 s was followed for 16). Now each round is one host call that watches the job's file there
and returns as soon as the job ended, or when the round's wait is over; the job's result is then read once with
async_status itself.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

# How often the host looks at the job's file within a round: a local stat and read, far below the cost of a call.
JOB_TICK_S = 0.2


def job_ended(job_file: str) -> bool:
    """Whether ansible.builtin.async_status would call the job finished: its file holds the module's own result (no
    `started` key) or says `finished`. A job file that is missing or unreadable ends the wait as well, so that
    async_status, asked next, reports it in its own words ("could not find job")."""
    try:
        with open(job_file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return True
    try:
        data = json.loads(text)
    except ValueError:  # not written yet: async_status calls this running too
        return False
    if not isinstance(data, dict):
        return True
    return "started" not in data or bool(data.get("finished"))


def wait_for_job(job_file: str, wait_s: float, *, tick_s: float = JOB_TICK_S,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Watch `job_file` for up to `wait_s` seconds; True as soon as the job ended, False when the wait is over."""
    deadline = clock() + max(0.0, wait_s)
    while True:
        if job_ended(job_file):
            return True
        remaining = deadline - clock()
        if remaining <= 0:
            return False
        sleep(min(tick_s, remaining))


def read_tail(path: str, tail_bytes: int) -> bytes | None:
    """The last `tail_bytes` of a file (all of a smaller one), or None while it does not exist or cannot be read: a
    log of hours is never read whole to show its last line."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - tail_bytes))
            return handle.read()
    except OSError:
        return None
