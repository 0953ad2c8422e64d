#!/usr/bin/env python3
"""Measure what the weight prefetch buys: reading weight files cold (from disk) vs after the prefetch.

Writes N files of S GB of random bytes into a temporary directory on the real disk (default: under the
current directory, not /tmp, which may be tmpfs), then for the same files:
  1. evicts them from the page cache and reads them: the engine's load without a prefetch;
  2. evicts them again, runs the prefetch the sglang_service role runs (module_utils/specgate/service/page_cache.py,
     the code behind the page_cache_prefetch module), then reads them: the engine's load after a prefetch.
Residency is checked with mincore(2) before each read, so a "cold" read is proven cold.

    scripts/bench_page_cache.py --files 3 --gb 1 [--dir PATH] [--json OUT]

Eviction is posix_fadvise(DONTNEED) per file (mincore proves it worked); --drop-caches also writes
/proc/sys/vm/drop_caches where the kernel allows it. Needs only python3.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import mmap
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "module_utils" / "specgate" / "service"))
import page_cache  # stdlib-only module shared with the role

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def resident_fraction(path: Path) -> float:
    """Share of the file's pages in the page cache (mincore on a read-only mapping)."""
    size = path.stat().st_size
    if size == 0:
        return 1.0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        try:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            return sum(b & 1 for b in vec) / pages
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def evict(files: list[Path], drop_caches: bool) -> str:
    """Evict the files' pages. Per-file fadvise is the default: drop_caches empties the cache of everyone
    on a shared machine."""
    method = "fadvise_dontneed"
    if drop_caches:
        try:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("1\n")
            method = "drop_caches"
        except OSError:
            pass
    for path in files:
        page_cache.drop_from_cache(path)
    return method


def write_files(directory: Path, count: int, gb: float) -> list[Path]:
    chunk = os.urandom(16 * 1024 * 1024)
    size = int(gb * 1e9)
    files = []
    for i in range(count):
        path = directory / f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        with open(path, "wb") as handle:
            left = size
            while left > 0:
                left -= handle.write(chunk[: min(len(chunk), left)])
            handle.flush()
            os.fsync(handle.fileno())
        files.append(path)
    return files


def timed_read(files: list[Path]) -> dict:
    resident = sum(resident_fraction(p) * p.stat().st_size for p in files) / sum(p.stat().st_size for p in files)
    result = page_cache.prefetch(files)  # a full sequential read, as an engine's loader does
    return {"resident_before": round(resident, 4), **result.as_dict()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--gb", type=float, default=1.0, help="size of each file in GB (1e9 bytes)")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where the temporary directory is made")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--drop-caches", action="store_true", help="also drop the whole page cache (root)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="specgate-pagecache-", dir=args.dir) as tmp:
        files = write_files(Path(tmp), args.files, args.gb)
        method = evict(files, args.drop_caches)
        cold = timed_read(files)
        evict(files, args.drop_caches)
        plan = page_cache.plan_prefetch(files, page_cache.mem_available_bytes(), 0.5)
        prefetch = page_cache.prefetch(plan.files).as_dict() if plan.fits else {"skipped": "does not fit"}
        warm = timed_read(files)
    report = {
        "files": args.files,
        "gb_each": args.gb,
        "evict_method": method,
        "cold_read": cold,
        "prefetch": prefetch,
        "read_after_prefetch": warm,
        "speedup": round(warm["gb_per_s"] / cold["gb_per_s"], 1) if cold["gb_per_s"] else None,
    }
    print(f"evicted with {method}")
    print(
        f"cold read:            {cold['gb_per_s']:8.2f} GB/s  ({cold['seconds']:.2f} s, resident before "
        f"{cold['resident_before']:.0%})"
    )
    if "gb_per_s" in prefetch:
        print(f"prefetch (old serves): {prefetch['gb_per_s']:7.2f} GB/s  ({prefetch['seconds']:.2f} s)")
    print(
        f"read after prefetch:  {warm['gb_per_s']:8.2f} GB/s  ({warm['seconds']:.2f} s, resident before "
        f"{warm['resident_before']:.0%})"
    )
    print(f"speedup of the engine's read: {report['speedup']}x")
    print(json.dumps(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    cold_ok = cold["resident_before"] < 0.05
    warm_ok = warm["resident_before"] > 0.95
    if not (cold_ok and warm_ok):
        print("residency check failed: the cold read was not cold or the prefetch did not stay cached", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
