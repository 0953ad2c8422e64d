"""Plan a weights download from hub metadata: which files are missing, how many bytes, and whether they fit.

Pure functions over plain data (hub listing, local stat results, statvfs numbers), so every decision the
model_weights role takes before touching the network or the disk is unit-tested without a hub.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

GB = 1000**3
# huggingface_hub's local_dir bookkeeping; never part of a snapshot.
HF_LOCAL_CACHE = ".cache"
MANIFEST_NAME = ".specgate-manifest.json"


@dataclass(frozen=True)
class RemoteFile:
    """One file of a repo at a commit, as the hub lists it."""

    path: str
    size: int
    sha256: str | None = None
    blob_id: str | None = None


@dataclass
class SnapshotPlan:
    """What one snapshot (target or drafter) still needs."""

    name: str
    repo_id: str
    revision: str
    commit: str
    local_dir: str
    files: list[RemoteFile]
    missing: list[RemoteFile] = field(default_factory=list)
    wrong_size: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def needed_bytes(self) -> int:
        return sum(f.size for f in self.missing)

    @property
    def complete(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "repo_id": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
            "path": self.local_dir,
            "file_count": len(self.files),
            "total_bytes": self.total_bytes,
            "needed_bytes": self.needed_bytes,
            "missing": [f.path for f in self.missing],
            "wrong_size": list(self.wrong_size),
        }


@dataclass
class FilesystemNeed:
    """Bytes still to write on one filesystem, by snapshot, against what it has free."""

    mount: str
    free_bytes: int
    headroom_bytes: int
    parts: dict[str, int]

    @property
    def needed_bytes(self) -> int:
        return sum(self.parts.values()) + self.headroom_bytes

    @property
    def fits(self) -> bool:
        return sum(self.parts.values()) == 0 or self.needed_bytes <= self.free_bytes

    def message(self) -> str:
        parts = [f"{name} {gb(size)}" for name, size in self.parts.items() if size]
        if self.headroom_bytes:
            parts.append(f"headroom {gb(self.headroom_bytes)}")
        return f"need {gb(self.needed_bytes)} more on {self.mount} ({' + '.join(parts)}), {gb(self.free_bytes)} free"

    def as_dict(self) -> dict:
        return {
            "mount": self.mount,
            "free_bytes": self.free_bytes,
            "needed_bytes": self.needed_bytes,
            "headroom_bytes": self.headroom_bytes,
            "parts": dict(self.parts),
            "fits": self.fits,
            "message": self.message(),
        }


def gb(size: int) -> str:
    """Decimal gigabytes with one decimal, the unit the hub shows sizes in."""
    return f"{size / GB:.1f} GB"


def _normalize_pattern(pattern: str) -> str:
    # Same rule as huggingface_hub.utils.filter_repo_objects: "dir/" means everything below it.
    return pattern + "*" if pattern.endswith("/") else pattern


def select_files(
    files: Iterable[RemoteFile], allow_patterns: Sequence[str] | None, ignore_patterns: Sequence[str] | None
) -> list[RemoteFile]:
    """The files snapshot_download would fetch with these patterns (fnmatch, as huggingface_hub matches)."""
    allow = [_normalize_pattern(p) for p in allow_patterns or []]
    ignore = [_normalize_pattern(p) for p in ignore_patterns or []]
    selected = []
    for remote in files:
        if allow and not any(fnmatch.fnmatch(remote.path, p) for p in allow):
            continue
        if any(fnmatch.fnmatch(remote.path, p) for p in ignore):
            continue
        selected.append(remote)
    return selected


def exact_pattern(path: str) -> str:
    """An fnmatch pattern matching exactly `path` (so snapshot_download fetches only the files we planned)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def local_size(local_dir: str, relative: str) -> int | None:
    """Size of a snapshot file on disk, None when it is absent (or not a regular file)."""
    try:
        stat = os.stat(os.path.join(local_dir, *relative.split("/")))
    except (FileNotFoundError, NotADirectoryError):
        return None
    return stat.st_size if os.path.isfile(os.path.join(local_dir, *relative.split("/"))) else None


def plan_snapshot(
    *,
    name: str,
    repo_id: str,
    revision: str,
    commit: str,
    local_dir: str,
    files: Sequence[RemoteFile],
    size_of: Callable[[str, str], int | None] = local_size,
) -> SnapshotPlan:
    """Compare the hub's listing with the disk by size: a file is complete only when present at its exact size.

    Reading metadata only keeps a no-op run cheap whatever the snapshot weighs; sha256 is a separate, opt-in pass.
    """
    plan = SnapshotPlan(name=name, repo_id=repo_id, revision=revision, commit=commit, local_dir=local_dir,
                        files=list(files))
    for remote in files:
        size = size_of(local_dir, remote.path)
        if size == remote.size:
            continue
        plan.missing.append(remote)
        if size is not None:
            plan.wrong_size.append(remote.path)
    return plan


def existing_ancestor(path: str) -> Path:
    """The path or its nearest existing parent: /models may not exist yet, its filesystem does."""
    candidate = Path(path)
    while not candidate.exists() and candidate != candidate.parent:
        candidate = candidate.parent
    return candidate


def mount_point(path: Path) -> str:
    """The mount point holding `path` (walk up while the device stays the same)."""
    current = path.resolve()
    device = current.stat().st_dev
    while current != current.parent and current.parent.stat().st_dev == device:
        current = current.parent
    return str(current)


@dataclass(frozen=True)
class FsInfo:
    device: int
    mount: str
    free_bytes: int


def fs_info(path: str) -> FsInfo:
    """Filesystem identity and space available to unprivileged writers (f_bavail) for a path to be."""
    anchor = existing_ancestor(path)
    stats = os.statvfs(anchor)
    return FsInfo(device=anchor.stat().st_dev, mount=mount_point(anchor), free_bytes=stats.f_bavail * stats.f_frsize)


def disk_needs(
    plans: Sequence[SnapshotPlan], headroom_bytes: int, fs_of: Callable[[str], FsInfo] = fs_info
) -> list[FilesystemNeed]:
    """Group what every snapshot still needs by filesystem, so target and drafter are counted together."""
    needs: dict[int, FilesystemNeed] = {}
    for plan in plans:
        info = fs_of(plan.local_dir)
        need = needs.setdefault(info.device, FilesystemNeed(info.mount, info.free_bytes, headroom_bytes, {}))
        need.parts[plan.name] = need.parts.get(plan.name, 0) + plan.needed_bytes
    return list(needs.values())


def disk_failures(needs: Sequence[FilesystemNeed]) -> list[str]:
    return [need.message() for need in needs if not need.fits]


def setting_of(name: str, setting: str, field: str) -> str:
    """``setting`` with its {field} filled in, or model_weights_<name>_<field> when the snapshot names none."""
    return setting.replace("{field}", field) if setting else f"model_weights_{name}_{field}"
