#!/usr/bin/env python3
"""Print the Debian mirror this machine already uses, read from its own apt sources.

The systemd test image is built with debootstrap from the same mirror the machine's apt uses, so no
mirror host is ever written into the project. Handles deb822 (`*.sources`) and one-line
(`sources.list`) formats; the first `deb` entry whose suite is the wanted release (or a release
suite of it such as bookworm-updates is skipped) wins.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

APT_DIR = Path("/etc/apt")


def mirrors_from_deb822(text: str, suite: str) -> list[str]:
    found: list[str] = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if suite in fields.get("suites", "").split():
            found.extend(fields.get("uris", "").split())
    return found


def mirrors_from_one_line(text: str, suite: str) -> list[str]:
    found: list[str] = []
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", " ", line.split("#", 1)[0]).split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if len(words) >= 2 and words[1] == suite:
            found.append(words[0])
    return found


def find_mirror(apt_dir: Path, suite: str) -> str | None:
    sources_dir = apt_dir / "sources.list.d"
    deb822_files = sorted(sources_dir.glob("*.sources")) if sources_dir.is_dir() else []
    one_line_files = [apt_dir / "sources.list", *(sorted(sources_dir.glob("*.list")) if sources_dir.is_dir() else [])]
    candidates: list[str] = []
    for path in deb822_files:
        candidates += mirrors_from_deb822(path.read_text(), suite)
    for path in one_line_files:
        if path.is_file():
            candidates += mirrors_from_one_line(path.read_text(), suite)
    return candidates[0] if candidates else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--apt-dir", type=Path, default=APT_DIR)
    args = parser.parse_args()
    mirror = find_mirror(args.apt_dir, args.suite)
    if mirror is None:
        print(f"no apt source for suite {args.suite!r} under {args.apt_dir}: add one, or pass --suite", file=sys.stderr)
        return 1
    print(mirror)
    return 0


if __name__ == "__main__":
    sys.exit(main())
