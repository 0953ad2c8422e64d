"""The active and known-good pointers of the release layout: symlinks base_dir/<name> -> releases/<id>."""

from __future__ import annotations

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
