"""The sweep's manifest: everything that determines a row, recorded once per sweep id, so a row is read only under the
conditions it was measured in.

A row's number depends on its point (every setting, the drafter's repo and resolved revision included) and on the
conditions the whole sweep shares: the benchmark matrix and its settings, the engine (what the venv installs and what
it installed), and the target's revision. The manifest (``manifest.json`` beside the rows) records both; rows carry
the conditions' digest and their point's key, and resume reads a row only when both match.

Re-running a sweep id whose conditions changed, or whose points kept their names under other settings, is refused
before anything changes, naming what differs (``spec_sweep_on_change: refuse``), or continues in a fresh id that says
which one it continues (``new``: ``<id>.2``, then ``.3``; a re-run with the same change finds its continuation and
resumes it). Points added to the grid or left out of it are not a change: the rows of the others still hold, and the
report covers the points of the grid as it is. A reordered grid is the same grid.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_FILE = "manifest.json"
SCHEMA = "specgate.sweep-manifest/v1"
ON_CHANGE = ("refuse", "new")
# What each section of the conditions is, as a person reads it in a refusal.
SECTIONS = {
    "matrix": "the benchmark matrix",
    "engine": "the engine",
    "target": "the target model",
}


class ManifestChanged(ValueError):
    """The sweep id's recorded manifest differs from this run's: the message names what differs and the fixes."""


def digest(value: object) -> str:
    """A short, stable digest of a JSON-able value (key order never matters)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Manifest:
    conditions: Mapping[str, Mapping[str, Any]]  # section (SECTIONS) -> its settings
    points: Mapping[str, Mapping[str, Any]]  # point name -> its key (Point.key / ConfigPoint.key)

    @property
    def conditions_digest(self) -> str:
        return digest(self.conditions)

    def document(self, sweep_id: str, continues: str | None = None) -> dict[str, Any]:
        return {"schema": SCHEMA, "sweep_id": sweep_id, "continues": continues,
                "conditions_digest": self.conditions_digest, "conditions": dict(self.conditions),
                "points": dict(self.points)}  # fmt: skip


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _setting_differences(where: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append(f"{where}: {name} was {_short(old[name])}, now unset")
        elif name not in old:
            out.append(f"{where}: {name} is {_short(new[name])}, unset before")
        elif json.dumps(old[name], sort_keys=True, default=str) != json.dumps(new[name], sort_keys=True, default=str):
            if isinstance(old[name], Mapping) and isinstance(new[name], Mapping):
                out += _setting_differences(f"{where}: {name}", old[name], new[name])
            else:
                out.append(f"{where}: {name} {_short(old[name])} -> {_short(new[name])}")
    return out


def differences(recorded: Mapping[str, Any], current: Manifest) -> list[str]:
    """What makes the recorded manifest's rows not this run's, each as a person reads it: a condition's setting, or a
    point measured under its name with other settings. Points added or left out, and the grid's order, are not."""
    out = []
    old_conditions = recorded.get("conditions") or {}
    for section in sorted(set(old_conditions) | set(current.conditions)):
        out += _setting_differences(SECTIONS.get(section, section), old_conditions.get(section) or {},
                                    current.conditions.get(section) or {})  # fmt: skip
    old_points = recorded.get("points") or {}
    for name, key in current.points.items():
        if name in old_points and digest(old_points[name]) != digest(key):
            out += _setting_differences(f"point {name}", old_points[name], key)
    return out


def read(directory: Path) -> dict[str, Any] | None:
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def merged(recorded: Mapping[str, Any] | None, current: Manifest) -> Manifest:
    """The manifest to record: the current one, keeping the points an earlier run recorded that the grid left out
    (their rows still hold if the grid takes them back)."""
    points = dict((recorded or {}).get("points") or {})
    points.update(current.points)
    return Manifest(current.conditions, points)


@dataclass(frozen=True)
class Settled:
    sweep_id: str  # the id the run writes to: the one asked for, or its continuation
    directory: Path
    manifest: dict[str, Any]  # what to write as manifest.json (unchanged when it already says this)
    write: bool  # whether manifest.json must be written
    continues: str | None  # the id this run continues (spec_sweep_on_change: new), else None
    differences: tuple[str, ...] = ()  # what differed from the id asked for (with new)
    unrecorded_rows: bool = False  # the directory held rows but no manifest (an older sweep): none of them is read


def _has_rows(directory: Path) -> bool:
    return any(p.name != MANIFEST_FILE and p.suffix == ".json" for p in directory.glob("*.json"))


def settle(parent: Path, sweep_id: str, current: Manifest, on_change: str) -> Settled:
    """Where this run of ``sweep_id`` writes its rows under ``parent``, and the manifest to record there. Raises
    ManifestChanged (refuse) when the id's manifest differs from the current one."""
    if on_change not in ON_CHANGE:
        raise ManifestChanged(f"spec_sweep_on_change: {on_change!r} is not one of {', '.join(ON_CHANGE)}.")
    directory = Path(parent) / sweep_id
    recorded = read(directory)
    if recorded is None:
        document = current.document(sweep_id)
        return Settled(sweep_id, directory, document, True, None,
                       unrecorded_rows=directory.is_dir() and _has_rows(directory))  # fmt: skip
    found = differences(recorded, current)
    if found and not _has_rows(directory):  # nothing measured under the old manifest: nothing to protect
        return Settled(sweep_id, directory, current.document(sweep_id, recorded.get("continues")), True,
                       recorded.get("continues"))  # fmt: skip
    if not found:
        document = merged(recorded, current).document(sweep_id, recorded.get("continues"))
        return Settled(sweep_id, directory, document, document != recorded, recorded.get("continues"))
    if on_change == "refuse":
        listed = "; ".join(found[:8]) + (f"; and {len(found) - 8} more" if len(found) > 8 else "")
        raise ManifestChanged(
            f"spec_sweep_id {sweep_id}: its rows were measured under other conditions than this run's ({listed}). "
            "Its rows would not compare with new ones, so nothing was launched. Fix: set spec_sweep_on_change: new "
            f"to measure in a fresh id that continues {sweep_id}, give another spec_sweep_id, or put back what "
            "changed.")  # fmt: skip
    number = 2
    while True:
        candidate = f"{sweep_id}.{number}"
        there = read(Path(parent) / candidate)
        if there is None or not differences(there, current):
            break
        number += 1
    settled = settle(parent, candidate, current, "refuse")
    document = {**settled.manifest, "continues": sweep_id}
    return Settled(candidate, settled.directory, document, settled.write or document != settled.manifest, sweep_id,
                   tuple(found), settled.unrecorded_rows)  # fmt: skip


def build(points: Sequence[Any], conditions: Mapping[str, Mapping[str, Any]]) -> Manifest:
    """The manifest of ``points`` (anything with ``name`` and ``key()``) under ``conditions``."""
    return Manifest({k: dict(v or {}) for k, v in conditions.items()}, {p.name: p.key() for p in points})
