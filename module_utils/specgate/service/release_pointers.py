"""The active and known-good pointers of the release layout: symlinks base_dir/<name> -> releases/<id>."""

from __future__ import annotations

import json
import os
from pathlib import Path


def pointer_target(base_dir: str, name: str) -> str:
    """The release id a pointer names, or "" when the pointer is missing (first deploy).

    A pointer that exists but is not a link into base_dir/releases is someone's hand edit: refuse it
    rather than guess which release serves.
    """
    link = Path(base_dir) / name
    if not link.is_symlink():
        if link.exists():
            raise ValueError(f"{link} is not a symlink to a release; move it away and re-run the deploy")
        return ""
    target = Path(os.readlink(link))
    if not target.is_absolute():
        target = link.parent / target
    releases = Path(base_dir) / "releases"
    if target.parent != releases:
        raise ValueError(f"{link} points to {target}, outside {releases}; re-point it or re-run the deploy")
    return target.name


def release_dirs(base_dir: str) -> list[dict]:
    """Every release directory under base_dir/releases with its mtime (for pruning the oldest); hidden
    entries are staging directories of a write in progress or interrupted, never releases."""
    releases = Path(base_dir) / "releases"
    if not releases.is_dir():
        return []
    return [
        {"path": str(entry), "mtime": entry.stat().st_mtime}
        for entry in sorted(releases.iterdir())
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(".")
    ]


def release_port(base_dir: str, release_id: str) -> int:
    """The port a release was deployed with, from its release.json identity; 0 when the record does not say
    (a release written before identities carried the port, or a hand-made directory)."""
    record = Path(base_dir) / "releases" / release_id / "release.json"
    try:
        port = json.loads(record.read_text()).get("identity", {}).get("port")
    except (OSError, ValueError, AttributeError):
        return 0
    return int(port) if isinstance(port, int) or (isinstance(port, str) and port.isdigit()) else 0


# A launch file written within this many seconds before the engine started is the one it read: the restart protocol
# writes it, then stops the old server (never instant), then starts the new one.
LAUNCH_CLOCK_SLACK_S = 1.0


def launch_is_newer_than_engine(
    base_dir: str, started_monotonic_us: int, now_wall: float, now_monotonic: float
) -> bool:
    """Whether the active release's launch.yaml changed after the running engine read it at its start.

    The launch file holds what the release id leaves out (the API key): a run that rewrote it for a new key and
    stopped before the restart leaves an engine on the old key. ``started_monotonic_us`` is systemd's
    ExecMainStartTimestampMonotonic (0 when the unit does not run: nothing is stale then); the monotonic clock is
    turned into wall time with the caller's pair of readings taken together.
    """
    if started_monotonic_us <= 0:
        return False
    try:
        written = (Path(base_dir) / "active" / "launch.yaml").stat().st_mtime
    except OSError:
        return False
    started_wall = now_wall - (now_monotonic - started_monotonic_us / 1e6)
    return written > started_wall + LAUNCH_CLOCK_SLACK_S
