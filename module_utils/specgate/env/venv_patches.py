"""Apply source patches (e.g. DDTree, sgl-project/sglang PR #29907) to an installed venv, idempotently.

The state file records each patch's sha256 and keeps a copy of what was applied, so a re-run changes
nothing, a changed patch replaces its predecessor (reverse the old copy, apply the new one), and a venv
whose packages were reinstalled (patch gone, state stale) gets the patch again. Whether a patch is in
place is asked of `patch --dry-run` itself, never assumed from the state file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

STATE_NAME = "state.json"


class Action(Enum):
    SKIP = "skip"  # in place and recorded with this checksum
    RECORD = "record"  # in place (applied by hand or an earlier run that lost its state): record it
    APPLY = "apply"  # not in place and applies cleanly
    REPLACE = "replace"  # an older recorded version is in place: reverse it, apply this one
    CONFLICT = "conflict"  # neither applies nor is in place


@dataclass(frozen=True)
class Probe:
    """What `patch --dry-run` says about one patch against the tree."""

    forward_ok: bool  # applies cleanly
    reverse_ok: bool  # already in place
    old_reverse_ok: bool  # the recorded older version is in place


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def decide(recorded_sha: str | None, sha: str, probe: Probe) -> Action:
    if probe.reverse_ok:
        return Action.SKIP if recorded_sha == sha else Action.RECORD
    if recorded_sha is not None and recorded_sha != sha and probe.old_reverse_ok:
        return Action.REPLACE
    if probe.forward_ok:
        return Action.APPLY
    return Action.CONFLICT


def load_state(state_dir: Path) -> dict[str, Any]:
    path = state_dir / STATE_NAME
    if not path.exists():
        return {"patches": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def save_state(state_dir: Path, state: dict[str, Any]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".{STATE_NAME}.tmp"
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(state_dir / STATE_NAME)


# --force, not --batch: --batch guesses that a patch "looks reversed" and flips -R, which would make the
# already-applied probe answer yes for a patch that is not applied.
def patch_argv(
    patch_bin: str, patch_file: str | Path, target: str, strip: int, *, reverse: bool, dry_run: bool
) -> list[str]:
    argv = [
        patch_bin,
        "--force",
        "--no-backup-if-mismatch",
        "--silent",
        f"-p{strip}",
        "-d",
        target,
        "-i",
        str(patch_file),
    ]
    if reverse:
        argv.append("--reverse")
    else:
        argv.append("--forward")
    if dry_run:
        argv.append("--dry-run")
    return argv
