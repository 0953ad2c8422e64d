"""Disk, memory and OS facts preflight checks a deployment against."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

BYTES_PER_MIB = 1024 * 1024


def existing_ancestor(path: str) -> Path:
    """The path itself or its nearest existing parent: a bare host has no /models yet, but its filesystem does."""
    candidate = Path(path)
    while not candidate.exists() and candidate != candidate.parent:
        candidate = candidate.parent
    return candidate


def disk_free(path: str) -> dict[str, Any]:
    """Free MiB (for unprivileged users, as the service user sees it) on the filesystem that will hold path."""
    measured = existing_ancestor(path)
    stats = os.statvfs(measured)
    return {
        "path": path,
        "measured_at": str(measured),
        "free_mib": stats.f_bavail * stats.f_frsize // BYTES_PER_MIB,
        "total_mib": stats.f_blocks * stats.f_frsize // BYTES_PER_MIB,
    }


def parse_meminfo(text: str) -> int | None:
    """MemTotal of /proc/meminfo in MiB."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def parse_os_release(text: str) -> dict[str, str]:
    """ID and VERSION_ID of /etc/os-release (shell-quoted key=value lines)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        if sep and key.strip() in {"ID", "VERSION_ID", "PRETTY_NAME"}:
            parts = shlex.split(raw)
            values[key.strip()] = parts[0] if parts else ""
    return {
        "os_id": values.get("ID", ""),
        "os_version_id": values.get("VERSION_ID", ""),
        "os_pretty_name": values.get("PRETTY_NAME", ""),
    }


def read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def gather(paths: list[str], meminfo: str = "/proc/meminfo", os_release: str = "/etc/os-release") -> dict[str, Any]:
    return {
        "mem_total_mib": parse_meminfo(read_text(meminfo)),
        "disk": [disk_free(path) for path in paths],
        **parse_os_release(read_text(os_release)),
    }
