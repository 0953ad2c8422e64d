"""Wait until processes that held GPU memory have given it back, by polling nvidia-smi.

A new engine started while the old one's CUDA contexts still hold memory fails with out-of-memory
(or silently gets a smaller KV cache), so the restart waits for the release instead of sleeping.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]


class GpuQueryError(RuntimeError):
    """nvidia-smi could not be run or printed something that is not its compute-apps CSV."""


def parse_compute_apps(text: str) -> dict[int, int | None]:
    """Map PID -> used GPU memory in MiB (None where the driver reports "[N/A]").

    A PID with contexts on several GPUs appears once per GPU; its memory is summed.
    """
    held: dict[int, int | None] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.lower().startswith("no running"):
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 2 or not parts[0].isdigit():
            raise GpuQueryError(f"unexpected nvidia-smi compute-apps line: {line!r}")
        pid = int(parts[0])
        mib = int(parts[1]) if parts[1].isdigit() else None
        if pid in held and held[pid] is not None and mib is not None:
            held[pid] = held[pid] + mib
        elif pid not in held:
            held[pid] = mib
        else:
            held[pid] = None
    return held


def query_nvidia_smi(command: list[str] | None = None, timeout: float = 30.0) -> str:
    """Run the compute-apps query; raise GpuQueryError with nvidia-smi's own words on failure."""
    argv = command or NVIDIA_SMI_QUERY
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GpuQueryError(f"{argv[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise GpuQueryError(f"{argv[0]} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


@dataclass
class GpuReleaseResult:
    released: bool
    waited_s: float
    polls: int
    still_held: dict[int, int | None] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "released": self.released,
            "waited_s": round(self.waited_s, 3),
            "polls": self.polls,
            "still_held": {str(pid): mib for pid, mib in self.still_held.items()},
        }


def wait_for_gpu_release(
    pids: Iterable[int],
    *,
    query: Callable[[], str] = query_nvidia_smi,
    timeout: float = 120.0,
    interval: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GpuReleaseResult:
    """Poll until none of ``pids`` holds GPU memory, or ``timeout`` seconds pass.

    Returns as soon as a poll shows them gone (no fixed sleep after release). Other processes on the
    GPUs are none of our business and are ignored.
    """
    watched = {int(pid) for pid in pids}
    start = clock()
    polls = 0
    while True:
        polls += 1
        apps = parse_compute_apps(query())
        held = {pid: mib for pid, mib in apps.items() if pid in watched}
        elapsed = clock() - start
        if not held:
            return GpuReleaseResult(released=True, waited_s=elapsed, polls=polls)
        if elapsed >= timeout:
            return GpuReleaseResult(released=False, waited_s=elapsed, polls=polls, still_held=held)
        sleep(min(interval, max(timeout - elapsed, 0.0)))
