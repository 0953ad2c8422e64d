"""The sweep's loop, one question at a time: given the grid (or v1's configs) and the rows on the controller so far,
which point to launch next, the progress line to print as it starts, and what was skipped or failed.

Stateless like resume.py: the playbook launches the point this answers, writes its row, and asks again, so a
re-run of the same sweep id continues from the rows on disk (finished points are not launched again, a point
interrupted mid-bench is redone). The rows are the files `<name>.json` in the sweep's directory, each carrying its
point's key and the sweep's conditions digest (manifest.py): only a row of this point under these conditions counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ansible.module_utils.specgate.sweep.grid import Drafter, GridError, Point, expand, parse_drafter
from ansible.module_utils.specgate.sweep.pick import DEFAULT_TOLERANCE
from ansible.module_utils.specgate.sweep.progress import progress_line
from ansible.module_utils.specgate.sweep.repeats import repeats_wanted
from ansible.module_utils.specgate.sweep.resume import next_to_launch, plan, row_file, status
from ansible.module_utils.specgate.sweep.sweep_report import (
    deciding_cells,
    robust_winners,
    sweep_document,
    sweep_report_markdown,
)

CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


class SweepInputError(ValueError):
    """The sweep's variables cannot make a sweep: the message names the variable and the fix."""


@dataclass(frozen=True)
class ConfigPoint:
    """A v1 config (spec_sweep_configs): a name and the sglang_service_* variables it deploys with, no grid axes.
    It answers what resume.py asks of a point (name, key, cost), so v1 sweeps resume the same way."""

    name: str
    vars: tuple[tuple[str, Any], ...]
    drafter: Drafter | None = None

    def key(self) -> dict[str, Any]:
        return {"vars": dict(self.vars), **({"drafter": self.drafter.as_dict()} if self.drafter else {})}

    def cost(self) -> tuple:
        return ()

    def service_vars(self) -> dict[str, Any]:
        return dict(self.vars)


SweepPoint = Point | ConfigPoint


@dataclass(frozen=True)
class Step:
    """The answer to "what next?"."""

    point: SweepPoint | None  # None: the sweep is done
    index: int  # 1-based place of the point among the launchable ones (progress), 0 when done
    total: int  # launchable points (the grid less the rejected ones)
    progress: str | None
    finished: tuple[str, ...] = ()
    skipped: tuple[dict, ...] = ()  # rejected before any launch: {name, reason}
    failed: tuple[dict, ...] = ()  # crashed on start or in the benchmark: {name, reason}
    redo: Mapping[str, str] = field(default_factory=dict)
    pruned: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def drafter_of(raw: Mapping | None) -> Drafter | None:
    """The weights stage's drafter as {name, repo, revision, local_path}; None, or neither a repo nor a local path:
    no drafter."""
    if not raw or not (raw.get("repo") or raw.get("local_path")):
        return None
    return Drafter(repo=raw.get("repo") or None, revision=raw.get("revision") or None, name=raw.get("name") or None,
                   local_path=raw.get("local_path") or None)  # fmt: skip


def resolve_drafter(where: str, drafter: Drafter | None, catalog: Mapping[str, Mapping],
                    weights_drafter: Drafter | None) -> Drafter | None:  # fmt: skip
    """A point's drafter with its source: a name is looked up in model_weights_drafters (``catalog``), a repo without
    a revision takes the weights stage's when it is the same repo. Refusals name the variable and the fix."""
    if drafter is None:
        return None
    if drafter.name is not None and drafter.repo is None:
        entry = catalog.get(drafter.name)
        if entry is None:
            raise SweepInputError(
                f"{where}: drafter {drafter.name} is not an entry of model_weights_drafters "
                f"({', '.join(sorted(catalog)) or 'empty'}). Fix: add it there as {{repo, revision}} (or "
                "{local_path}), or give the point's drafter as {repo: <org>/<name>, revision: <commit>}.")  # fmt: skip
        repo, revision = entry.get("repo") or None, entry.get("revision") or None
        local_path = entry.get("local_path") or None
        if bool(repo) == bool(local_path) or (repo and not revision):
            raise SweepInputError(
                f"model_weights_drafters[{drafter.name}] (named by {where}) is {dict(entry)!r}: a drafter is a hub "
                "snapshot {repo, revision} or a pre-staged {local_path}.")  # fmt: skip
        return Drafter(repo=repo, revision=revision, name=drafter.name, local_path=local_path)
    revision = drafter.revision
    if revision is None and weights_drafter is not None and weights_drafter.repo == drafter.repo:
        revision = weights_drafter.revision
    if revision is None:
        raise SweepInputError(f"{where}: drafter {drafter.repo} has no revision; pin it (revision: <commit sha or "
                              "tag>), as model_weights pins every snapshot it downloads.")  # fmt: skip
    name = drafter.name
    if name is not None and name in catalog:
        entry = catalog[name]
        if (entry.get("repo"), entry.get("revision")) != (drafter.repo, revision):
            raise SweepInputError(
                f"{where}: drafter {name} is given as {drafter.repo}@{revision}, but model_weights_drafters[{name}] is "
                f"{dict(entry)!r}. Fix: name the catalog entry alone, or give the drafter another name.")  # fmt: skip
    if name is None:  # a catalog entry of the same source lends its name (the report's snippet names it)
        name = next((n for n, e in catalog.items()
                     if (e.get("repo"), e.get("revision")) == (drafter.repo, revision)), None)  # fmt: skip
    return Drafter(repo=drafter.repo, revision=revision, name=name)


def same_source(a: Drafter | None, b: Drafter | None) -> bool:
    return a is not None and b is not None and a.source() == b.source()


def sweep_drafters(points: Sequence[SweepPoint], weights_drafter: Drafter | None = None) -> list[dict[str, Any]]:
    """The drafters the points need besides the weights stage's own, once each in order, as the weights stage
    downloads them (model_weights_sweep_drafters): {key, name, repo, revision, local_path}. ``key`` names the drafter
    in specgate_weights.drafters, where each point finds its path."""
    out: dict[tuple, dict[str, Any]] = {}
    for point in points:
        drafter = point.drafter
        if drafter is None or same_source(drafter, weights_drafter) or drafter.source() in out:
            continue
        out[drafter.source()] = {"key": drafter.label, **drafter.as_dict()}
    return list(out.values())


def _check_one_revision_per_repo(points: Sequence[SweepPoint], weights_drafter: Drafter | None) -> None:
    seen: dict[str, tuple[str | None, str]] = {}
    if weights_drafter is not None and weights_drafter.repo:
        seen[weights_drafter.repo] = (weights_drafter.revision, "the weights stage's drafter (model_weights_drafter)")
    for point in points:
        drafter = point.drafter
        if drafter is None or not drafter.repo:
            continue
        revision, by = seen.setdefault(drafter.repo, (drafter.revision, f"point {point.name}"))
        if revision != drafter.revision:
            raise SweepInputError(
                f"point {point.name} names drafter {drafter.repo}@{drafter.revision}, {by} the same repo at "
                f"{revision}: both would download into model_weights_dir/<org>/<name>. Fix: sweep one revision of a "
                "drafter per run (or stage the other with {local_path} in model_weights_drafters).")  # fmt: skip


def points_of(grid: object = None, configs: Sequence[Mapping] | None = None, *,
              weights_drafter: Drafter | None = None,
              catalog: Mapping[str, Mapping] | None = None) -> list[SweepPoint]:  # fmt: skip
    """The sweep's points in order, from exactly one of spec_sweep_grid and spec_sweep_configs (v1, resolved: each
    {name, vars, drafter}), each point's drafter resolved to its source (``catalog``: model_weights_drafters). A
    point without a drafter runs on the weights stage's; the others' drafters are downloaded by the weights stage
    before the first launch (sweep_drafters)."""
    points = _points(grid, configs)
    catalog = dict(catalog or {})
    resolved: list[SweepPoint] = []
    for index, point in enumerate(points):
        where = (f"spec_sweep_configs[{index}] ({point.name})" if isinstance(point, ConfigPoint)
                 else f"spec_sweep_grid, point {point.name}")  # fmt: skip
        resolved.append(replace(point, drafter=resolve_drafter(where, point.drafter, catalog, weights_drafter)))
    _check_one_revision_per_repo(resolved, weights_drafter)
    return resolved


def _points(grid: object, configs: Sequence[Mapping] | None) -> list[SweepPoint]:
    has_grid = grid not in (None, [], {})
    has_configs = bool(configs)
    if has_grid == has_configs:
        raise SweepInputError(
            "Set exactly one of spec_sweep_configs (a list of configs) and spec_sweep_grid (axes and constraints): "
            + ("both are set." if has_grid else "neither is set.")
        )
    if has_configs:
        out: list[SweepPoint] = []
        for index, config in enumerate(configs or []):
            name = str(config.get("name") or "")
            if not CONFIG_NAME.match(name):
                raise SweepInputError(f"spec_sweep_configs[{index}]: name {name!r} is not letters, digits, dots "
                                      "and dashes (starting with a letter or digit).")  # fmt: skip
            raw_drafter = config.get("drafter")
            try:
                drafter = None if raw_drafter in (None, "none") else parse_drafter(f"spec_sweep_configs[{index}]",
                                                                                   raw_drafter)
            except GridError as error:
                raise SweepInputError(str(error)) from error
            out.append(ConfigPoint(name, tuple(sorted(dict(config.get("vars") or {}).items())), drafter))
        if len({p.name for p in out}) != len(out):
            raise SweepInputError("spec_sweep_configs: names repeat; give each config a unique name.")
        return out
    try:
        return list(expand(grid))
    except GridError as error:
        raise SweepInputError(str(error)) from error


def describe(point: SweepPoint, weights_drafter: Drafter | None = None,
             conditions: str | None = None) -> dict[str, Any]:  # fmt: skip
    """What the playbook needs of a point: its name, row file, variables, what every row of it records (``row``: its
    key and the sweep's conditions digest), and its drafter ({key, name, repo, revision, local_path}: ``key`` names it
    in specgate_weights.drafters; null key: the weights stage's own drafter serves it; null: the point names none and
    runs on the weights stage's)."""
    drafter = None
    if point.drafter is not None:
        drafter = {"key": None if same_source(point.drafter, weights_drafter) else point.drafter.label,
                   **point.drafter.as_dict()}  # fmt: skip
    return {"name": point.name, "file": row_file(point.name), "vars": point.service_vars(), "key": point.key(),
            "row": {"point": point.key(), "conditions": conditions}, "cost": list(point.cost()),
            "drafter": drafter}  # fmt: skip


def started_row(point: SweepPoint, conditions: str | None = None) -> dict[str, Any]:
    """Written as a point's launch begins: a sweep killed before its real row is written redoes the point."""
    return {"name": point.name, "release": "", "failed": False, "status": "started", "point": point.key(),
            "conditions": conditions}  # fmt: skip


def next_step(points: Sequence[SweepPoint], rows: Sequence[Mapping], *, search: bool = False,
              tolerance: float = DEFAULT_TOLERANCE, elapsed_s: float = 0.0,
              conditions: str | None = None) -> Step:  # fmt: skip
    """The point to launch next from the rows so far (exhaustive: the first unfinished; search: the search's next
    proposal), with the progress line "point i of N, elapsed, ETA" to print as it starts. The ETA is the median
    launch time of the rows that recorded one (``launch_s``), times the points left."""
    if search and any(isinstance(p, ConfigPoint) for p in points):
        raise SweepInputError(
            "spec_sweep_search needs spec_sweep_grid: a list of configs (spec_sweep_configs) "
            "has no ordered axes to search; set spec_sweep_search: false or give a grid."
        )
    if not 0 <= tolerance < 1:
        raise SweepInputError(f"spec_sweep_tolerance: {tolerance!r} must be a fraction in [0, 1), e.g. 0.01 for 1 %.")
    resumed = plan(points, rows, conditions)
    finished = resumed.finished
    skipped = tuple({"name": n, "reason": r.get("reason", "")} for n, r in finished.items()
                    if status(r) == "rejected")  # fmt: skip
    failed = tuple({"name": n, "reason": r.get("reason", "")} for n, r in finished.items() if status(r) == "failed")
    rejected = {s["name"] for s in skipped}
    launchable = [p for p in points if p.name not in rejected]
    done = [p for p in launchable if p.name in finished]
    if search:
        answer = next_to_launch(points, rows, search=True, tolerance=tolerance, conditions=conditions)
        point, pruned = answer.point, dict(answer.proposal.pruned) if answer.proposal else {}
        notes = tuple(answer.proposal.notes) if answer.proposal else ()
    else:
        point, pruned, notes = (resumed.todo[0] if resumed.todo else None), {}, ()
    durations = [float(r["launch_s"]) for r in finished.values()
                 if r.get("launch_s") is not None and status(r) in ("ok", "failed")]  # fmt: skip
    progress = None
    index = 0
    if point is not None:
        index = len(done) + 1
        progress = progress_line(index, len(launchable), point.name, elapsed_s, durations, search=search)
    return Step(point, index, len(launchable), progress, tuple(finished), skipped, failed, dict(resumed.redo), pruned,
                notes)  # fmt: skip


def check_max_repeats(max_repeats: int) -> None:
    if max_repeats < 0:
        raise SweepInputError(f"spec_sweep_max_repeats: {max_repeats!r} must be 0 (no repeats while a point serves) "
                              "or more, the most runs added to a use case's deciding cells.")  # fmt: skip


def repeat_plan(points: Sequence[SweepPoint], rows: Sequence[Mapping], row: Mapping, *, max_repeats: int,
                tolerance: float = DEFAULT_TOLERANCE, conditions: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The next round of repeats of ``row``'s point while it serves (repeats.py), against the other points' rows that
    count under these conditions: ``wanted`` (metric -> more runs), and the benchmark that takes them in one call,
    the union of the wanted metrics' deciding cells (``contexts`` in tokens, ``concurrency``) over ``runs`` runs.
    Nothing wanted: ``runs`` is 0."""
    check_max_repeats(max_repeats)
    finished = plan(points, rows, conditions).finished
    wanted = repeats_wanted(row, finished, max_repeats=max_repeats, tolerance=tolerance)
    cells = [deciding_cells(row, metric) for metric in wanted]
    return {"wanted": wanted, "runs": max(wanted.values(), default=0),
            "contexts": sorted({c for cell in cells for c in cell["contexts"]}),
            "concurrency": sorted({c for cell in cells for c in cell["concurrency"]})}  # fmt: skip


def report(directory: Path, sweep_id: str, host: str, points: Sequence[SweepPoint], rows: Sequence[Mapping], *,
           search: bool = False, tolerance: float = DEFAULT_TOLERANCE, write: bool = True,
           conditions: str | None = None, plot_by: Sequence[str] = ()) -> dict[str, Any]:  # fmt: skip
    """sweep.md (embedding the plots), sweep.json and the PNG plots under ``directory``, from the rows of the grid's
    points measured under this sweep's conditions (never a row of other settings or conditions, whatever its name);
    the winners per use case by the robust pick. ``write=False`` (check mode) works them out and writes nothing."""
    finished = plan(points, rows, conditions).finished
    standing = [{k: v for k, v in finished[p.name].items() if k != "_file"} for p in points if p.name in finished]
    best = robust_winners(standing, tolerance)
    step = next_step(points, rows, search=search, tolerance=tolerance, conditions=conditions)
    launches = {"mode": "search" if search else "exhaustive",
                "launched": sum(status(r) in ("ok", "failed") for r in standing), "points": len(points),
                "pruned": dict(step.pruned), "notes": list(step.notes)}  # fmt: skip
    directory = Path(directory)
    # matplotlib only when a report is written: every other call of the sweep's module (each step's state) skips its
    # import, a second of the controller's CPU each.
    from ansible.module_utils.specgate.sweep.plots import write_plots

    plots = [str(p) for p in write_plots(standing, directory, plot_by)] if write else []
    markdown = sweep_report_markdown(sweep_id, host, standing, best, plots=plots, launches=launches)
    document = sweep_document(sweep_id, host, standing, best, plots=plots, launches=launches)
    if write:
        (directory / "sweep.md").write_text(markdown)
        (directory / "sweep.json").write_text(json.dumps(document, indent=1) + "\n")
    return {"markdown": markdown, "winners": document["winners"], "launches": launches,
            "files": [str(directory / "sweep.md"), str(directory / "sweep.json"), *plots]}  # fmt: skip
