"""Resuming a sweep from the rows on the controller: which points are finished, which must be launched again.

A point's row is its file ``<name>.json``, read only when it was measured for this point's settings (its ``point``
key) under this sweep's conditions (its ``conditions`` digest, manifest.py): a row of any other settings or
conditions is never read, whatever its file name or order. A point is finished when its row says it ran with a
complete benchmark (every run, every cell), that it was rejected before any launch, or that it failed to start (a
crash is an answer: launching it again costs another load and gives the same one). A row marked started, or one whose
benchmark stopped part-way, is redone.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ansible.module_utils.specgate.sweep.grid import Point
from ansible.module_utils.specgate.sweep.manifest import MANIFEST_FILE
from ansible.module_utils.specgate.sweep.pick import DEFAULT_TOLERANCE
from ansible.module_utils.specgate.sweep.search import Measured, Proposal, propose
from ansible.module_utils.specgate.sweep.sweep_report import USE_CASES

REPORT_FILES = ("sweep.json", MANIFEST_FILE)
FINISHED_STATUSES = ("ok", "failed", "rejected")


@dataclass(frozen=True)
class ResumePlan:
    finished: Mapping[str, Mapping]  # point name -> its row
    todo: tuple[Point, ...]  # in grid order
    redo: Mapping[str, str] = field(default_factory=dict)  # point name -> why its row does not count


def row_file(name: str) -> str:
    """The file of a point's row: one per point name, so a redo rewrites it and no other file can stand in for it."""
    return f"{name}.json"


def load_rows(directory: Path) -> list[dict]:
    """The rows written so far (one JSON file per point), each with the file it came from (``_file``); the report
    and manifest files are not rows."""
    rows = []
    for path in sorted(Path(directory).glob("*.json")):
        if path.name in REPORT_FILES:
            continue
        try:
            row = json.loads(path.read_text())
        except json.JSONDecodeError as error:  # a write cut short by the kill that interrupted the sweep
            rows.append({"name": path.stem, "status": "started", "unreadable": str(error), "_file": path.name})
            continue
        if isinstance(row, dict) and "name" in row:
            rows.append({**row, "_file": path.name})
    return rows


def status(row: Mapping) -> str:
    if "status" in row:
        return row["status"]
    return "failed" if row.get("failed") else "ok"  # a v1 row: written only once its benchmark finished


def why_not_finished(row: Mapping, point: Point, conditions: str | None = None) -> str | None:
    if row.get("point") != point.key():
        return "its row was written for other settings under this name"
    if conditions is not None and row.get("conditions") != conditions:
        return "its row was measured under other conditions (benchmark matrix, engine or target)"
    state = status(row)
    if state not in FINISHED_STATUSES:
        return f"its row says {state}: interrupted before its benchmark finished"
    if state == "ok" and row.get("bench_complete") is False:
        return "its benchmark stopped part-way (a run or a cell is missing)"
    return None


def plan(points: Sequence[Point], rows: Sequence[Mapping], conditions: str | None = None) -> ResumePlan:
    """``conditions``: the sweep's conditions digest (manifest.py); None reads rows whatever they were measured under
    (a caller without a manifest, e.g. the search benchmark)."""
    by_file = {row.get("_file", row_file(row["name"])): row for row in rows}
    finished: dict[str, Mapping] = {}
    redo: dict[str, str] = {}
    for point in points:
        row = by_file.get(row_file(point.name))
        if row is None:
            continue
        reason = why_not_finished(row, point, conditions)
        if reason is None:
            finished[point.name] = row
        else:
            redo[point.name] = reason
    return ResumePlan(finished, tuple(p for p in points if p.name not in finished), redo)


def search_scores(finished: Mapping[str, Mapping]) -> dict[str, dict[str, Measured] | None]:
    """Per finished point, its mean, runs and spread per use case metric; None where it did not run."""
    out: dict[str, dict[str, Measured] | None] = {}
    for name, row in finished.items():
        if status(row) != "ok":
            out[name] = None
            continue
        runs = row.get("per_run") or {}
        values: dict[str, Measured] = {}
        for _key, _meaning, metric in USE_CASES:
            measured = runs.get(metric) or ([row[metric]] if row.get(metric) is not None else [])
            if measured:
                values[metric] = Measured(statistics.fmean(measured), len(measured),
                                          statistics.stdev(measured) if len(measured) > 1 else 0.0)  # fmt: skip
        out[name] = values or None
    return out


@dataclass(frozen=True)
class NextLaunch:
    point: Point | None  # None: the sweep is done
    resume: ResumePlan
    proposal: Proposal | None  # the search's answer (search mode only)


def next_to_launch(points: Sequence[Point], rows: Sequence[Mapping], *, search: bool,
                   tolerance: float = DEFAULT_TOLERANCE, conditions: str | None = None) -> NextLaunch:  # fmt: skip
    """What a sweep launches next, from the rows on disk alone: the first unfinished point (exhaustive), or the
    search's first proposal (search mode). A resumed sweep asks the same question."""
    resumed = plan(points, rows, conditions)
    if not search:
        return NextLaunch(resumed.todo[0] if resumed.todo else None, resumed, None)
    proposal = propose(points, search_scores(resumed.finished), tolerance)
    return NextLaunch(proposal.points[0] if proposal.points else None, resumed, proposal)
