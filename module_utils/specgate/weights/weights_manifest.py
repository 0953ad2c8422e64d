"""The per-snapshot manifest (`.specgate-manifest.json`) and the optional content checks behind it."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ansible.module_utils.specgate.weights.weights_plan import MANIFEST_NAME, RemoteFile

READ_CHUNK = 8 * 1024 * 1024


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_id_of(path: str) -> str:
    """git's object id for a file: what the hub publishes for files not stored in LFS."""
    digest = hashlib.sha1(b"blob %d\0" % os.path.getsize(path), usedforsecurity=False)
    with open(path, "rb") as handle:
        while chunk := handle.read(READ_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_mismatch(local_dir: str, remote: RemoteFile) -> str | None:
    """Why a file's bytes differ from what the hub publishes, None when they match or nothing is published."""
    path = os.path.join(local_dir, *remote.path.split("/"))
    if remote.sha256:
        actual = sha256_of(path)
        return None if actual == remote.sha256 else f"{remote.path}: sha256 {actual}, hub says {remote.sha256}"
    if remote.blob_id:
        actual = git_blob_id_of(path)
        return None if actual == remote.blob_id else f"{remote.path}: git blob {actual}, hub says {remote.blob_id}"
    return None


def manifest_path(local_dir: str) -> Path:
    return Path(local_dir) / MANIFEST_NAME


def read_manifest(local_dir: str) -> dict[str, Any] | None:
    try:
        data = json.loads(manifest_path(local_dir).read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def verified_hashes(manifest: Mapping[str, Any] | None, files: Sequence[RemoteFile]) -> set[str]:
    """Files a previous run already hashed against the same published sha256 (no need to read them again)."""
    if not manifest:
        return set()
    recorded = {f.get("path"): f for f in manifest.get("files", []) if isinstance(f, Mapping)}
    done = set()
    for remote in files:
        entry = recorded.get(remote.path)
        if entry and entry.get("size") == remote.size and entry.get("sha256") and entry.get("sha256") == remote.sha256:
            done.add(remote.path)
    return done


def build_manifest(
    *,
    repo_id: str | None,
    revision: str | None,
    commit: str | None,
    source: str,
    files: Sequence[RemoteFile],
    verified: set[str],
    allow_patterns: Sequence[str] | None,
    ignore_patterns: Sequence[str] | None,
) -> dict[str, Any]:
    """What the snapshot is: enough to tell later which repo, commit and bytes a directory holds."""
    return {
        "format": 1,
        "source": source,
        "repo_id": repo_id,
        "revision": revision,
        "commit": commit,
        "allow_patterns": list(allow_patterns or []),
        "ignore_patterns": list(ignore_patterns or []),
        "total_bytes": sum(f.size for f in files),
        "files": [
            {"path": f.path, "size": f.size, **({"sha256": f.sha256} if f.path in verified and f.sha256 else {})}
            for f in sorted(files, key=lambda f: f.path)
        ],
    }


def manifest_differs(existing: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether writing `new` changes anything but the timestamp."""
    if existing is None:
        return True
    return {k: v for k, v in existing.items() if k != "written_at"} != dict(new)


def write_manifest(local_dir: str, manifest: Mapping[str, Any], written_at: str) -> None:
    """Atomically (write + rename), so a reader never sees half a manifest."""
    target = manifest_path(local_dir)
    fd, tmp = tempfile.mkstemp(prefix=".specgate-manifest.", dir=local_dir)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({**manifest, "written_at": written_at}, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
