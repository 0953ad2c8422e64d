"""Download progress the play can show while a long download runs: bytes done/total, rate and ETA.

hf_snapshot runs async and writes this report through common.progress.ProgressWriter; the role's
specgate_follow_job task prints its line on every poll. Bytes are measured on disk (finished files plus
huggingface_hub's `*.incomplete` temp files), which is what a download really achieved, independent of the
client's progress bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ansible.module_utils.specgate.common.progress import format_duration
from ansible.module_utils.specgate.weights.weights_plan import GB, HF_LOCAL_CACHE, RemoteFile, local_size


def progress_report(*, done: int, total: int, baseline: int, elapsed: float, label: str) -> dict[str, Any]:
    """A report with a human line; rate counts only bytes fetched by this run (not what was already there)."""
    fetched = max(done - baseline, 0)
    rate = fetched / elapsed if elapsed > 0 else 0.0
    remaining = max(total - done, 0)
    eta = remaining / rate if rate > 0 else None
    percent = 100.0 * done / total if total else 100.0
    # GB for real checkpoints, MB for small ones (fixtures, drafter-only runs) so the numbers still move.
    unit, scale = ("GB", GB) if total >= GB else ("MB", 1e6)
    line = f"{label}: {done / scale:.2f} / {total / scale:.2f} {unit} ({percent:.0f}%), {rate / 1e6:.1f} MB/s, ETA "
    line += format_duration(eta) if eta is not None else ("done" if remaining == 0 else "unknown")
    return {
        "label": label,
        "done_bytes": done,
        "total_bytes": total,
        "rate_bytes_per_s": rate,
        "eta_s": eta,
        "percent": round(percent, 1),
        "line": line,
    }


def bytes_on_disk(local_dir: str, files: Sequence[RemoteFile]) -> int:
    """Bytes of the planned files present (capped at their size) plus in-flight temp files of huggingface_hub."""
    done = 0
    for remote in files:
        size = local_size(local_dir, remote.path)
        if size is not None:
            done += min(size, remote.size)
    download_dir = Path(local_dir) / HF_LOCAL_CACHE / "huggingface" / "download"
    if download_dir.is_dir():
        for partial in download_dir.rglob("*.incomplete"):
            try:
                done += partial.stat().st_size
            except FileNotFoundError:  # renamed into place between listing and stat
                continue
    return done
