"""A file generated from others (docs, the dashboard, the deployment schema): written, or checked (CI's --check)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, text: str, *, check: bool, root: Path, script: str) -> int:
    """Write ``text`` to ``path``; with ``check``, write nothing and return 1 when the file differs, naming the script
    that regenerates it."""
    if check:
        if not path.exists() or path.read_text() != text:
            print(f"{path.relative_to(root)} is out of date: run {script}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0
