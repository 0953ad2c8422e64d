"""Read weight files into the page cache so the next engine start loads them from memory.

Called while the old release still serves: the restart then costs the engine's own load work only,
not the disk. The read is a plain sequential read (posix_fadvise WILLNEED only *asks* the kernel and
returns before anything is cached, so it proves nothing); pages land in the cache whoever reads them.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")
CHUNK = 16 * 1024 * 1024


def weight_files(roots: Iterable[str], patterns: Iterable[str] = DEFAULT_PATTERNS) -> list[Path]:
    """Files under each root (a file or a directory, searched recursively) matching a pattern, sorted."""
    pats = tuple(patterns)
    found: set[Path] = set()
    for root in roots:
        path = Path(root)
        if path.is_file():
            found.add(path.resolve())
            continue
        if not path.is_dir():
            raise FileNotFoundError(f"weights path {root} does not exist")
        for dirpath, _dirs, files in os.walk(path, followlinks=True):
            for name in files:
                if any(fnmatch.fnmatch(name, pat) for pat in pats):
                    found.add((Path(dirpath) / name).resolve())
    return sorted(found)


def mem_available_bytes(meminfo: str = "/proc/meminfo") -> int:
    with open(meminfo, encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{meminfo} has no MemAvailable line")


@dataclass
class PrefetchPlan:
    files: list[Path]
    total_bytes: int
    budget_bytes: int

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.budget_bytes


def plan_prefetch(files: list[Path], available_bytes: int, max_fraction: float) -> PrefetchPlan:
    """Prefetch only what fits in ``max_fraction`` of available memory.

    Reading more than memory holds evicts the first files before the engine gets to them, and pushes
    the serving engine's own pages out: all cost, no gain.
    """
    total = sum(f.stat().st_size for f in files)
    return PrefetchPlan(files=files, total_bytes=total, budget_bytes=int(available_bytes * max_fraction))


@dataclass
class PrefetchResult:
    files: int
    bytes_read: int
    seconds: float
    per_file: list[dict] = field(default_factory=list)

    @property
    def gb_per_s(self) -> float:
        return self.bytes_read / 1e9 / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "gb_per_s": round(self.gb_per_s, 3),
        }


def read_into_cache(path: Path, chunk: int = CHUNK) -> int:
    """Read a file end to end; returns bytes read. The buffer is reused: memory use stays at one chunk."""
    buf = bytearray(chunk)
    view = memoryview(buf)
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        while True:
            got = os.readv(fd, [view])
            if got == 0:
                break
            total += got
    finally:
        os.close(fd)
    return total


def prefetch(files: Iterable[Path], chunk: int = CHUNK) -> PrefetchResult:
    start = time.monotonic()
    count = 0
    total = 0
    for path in files:
        total += read_into_cache(path, chunk)
        count += 1
    return PrefetchResult(files=count, bytes_read=total, seconds=time.monotonic() - start)


def drop_from_cache(path: Path) -> None:
    """Ask the kernel to forget a file's clean pages (benchmarks use it to get a cold read)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
