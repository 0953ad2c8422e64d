"""`spec_sweep_grid`: axes and constraints expanded into named sweep points, each with the variables it deploys with.

A grid is one sub-grid or a list of them (the field notes' sweep is two: block size 8 over budget x top-k x window,
block size 16 over budgets 16 and 32). Constraints are Jinja2 expressions over the axis names, as Ansible's `when:`
reads them, and a point is kept only where every one is true.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from ansible.module_utils.specgate.service.sglang_flags import ALGORITHMS, DFLASH_FAMILY, EAGLE_FAMILY, SPEC_KEYS, var


def axis_name(key: str) -> str:
    """A speculative setting's grid axis: the name the field notes' sweep gives it where that is shorter than the
    setting's own (budget, topk, window; sglang_flags.SPEC_KEYS says which), else its key."""
    return SPEC_KEYS[key].axis or key


# A grid's axes: the algorithm and each speculative setting (sglang_flags.SPEC_KEYS).
AXIS_VARS = {"algorithm": var("algorithm"), **{axis_name(key): var(key) for key in SPEC_KEYS}}
BLOCK_ALGORITHMS = DFLASH_FAMILY  # a block, a budget and a window (the field notes' sweep)
DRAFT_MODEL_ALGORITHMS = EAGLE_FAMILY  # steps, top-k and draft tokens (NEXTN: the model's own MTP layers)
BASELINE = ALGORITHMS[0]  # "none", no speculation: the baseline every speed-up is measured against
# Which axes each kind of algorithm takes; the others must not be set for it. A draft-model algorithm takes the settings
# that apply to it; a block algorithm the DFlash family's own (draft tokens, which DFLASH shares with the draft-model
# algorithms, is not a block axis: a DFLASH chain's verify width is its block size).
EAGLE_AXES = tuple(axis_name(key) for key, knob in SPEC_KEYS.items()
                   if set(knob.applies_to) & set(DRAFT_MODEL_ALGORITHMS))  # fmt: skip
_BLOCK_AXES = {axis_name(key) for key, knob in SPEC_KEYS.items()
               if not set(knob.applies_to) & set(DRAFT_MODEL_ALGORITHMS)}  # fmt: skip
ALGORITHM_AXES = {
    BASELINE: set(),
    **{a: _BLOCK_AXES | {"drafter"} for a in BLOCK_ALGORITHMS},
    **{a: {*EAGLE_AXES, "drafter"} for a in DRAFT_MODEL_ALGORITHMS},
}
ORDERED_AXES = ("budget", "topk")  # along these throughput is unimodal (field notes: tok/s falls past budget 8)
AXES = (*AXIS_VARS, "parallel", "drafter")
# The service variables a point's drafter sets (from the weights stage's download): a sub-grid naming a drafter
# leaves them to it.
DRAFTER_VARS = ("sglang_service_drafter_path", "sglang_service_drafter_revision")
SUBGRID_KEYS = ("name", "axes", "constraints", "drafter", "parallel_presets", "vars")


class GridError(ValueError):
    """spec_sweep_grid cannot be expanded: the message names the entry, the axis and the fix."""


@dataclass(frozen=True)
class Drafter:
    """A point's drafter: a hub snapshot (repo, revision), a pre-staged directory (local_path), or the name of an entry
    of model_weights_drafters (the sweep resolves the name to the entry's source before any launch)."""

    repo: str | None = None
    revision: str | None = None
    name: str | None = None
    local_path: str | None = None

    @property
    def label(self) -> str:
        """How the sweep names the drafter (its row, its snapshot in the weights stage): its name, else its repo."""
        return self.name or self.repo or self.local_path or ""

    def source(self) -> tuple:
        """Where its files come from: two drafters of one source are one download."""
        return (self.repo, self.revision, self.local_path)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "repo": self.repo, "revision": self.revision, "local_path": self.local_path}


@dataclass(frozen=True)
class Point:
    """One server config of the sweep: one launch."""

    name: str
    algorithm: str
    block_size: int | None
    budget: int | None
    topk: int | None
    window: int | None
    parallel: str | None = None
    drafter: Drafter | None = None
    extra_vars: tuple[tuple[str, Any], ...] = field(default=())
    num_steps: int | None = None  # EAGLE3 / NEXTN
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None

    @property
    def verify_tokens(self) -> int:
        """Tokens the target verifies per request and step: the step's cost (tree nodes + root, the block, the draft
        tokens of EAGLE3/NEXTN, or one token without speculation)."""
        if self.algorithm == "DDTREE":
            return (self.budget or (self.block_size or 1) - 1) + 1
        if self.algorithm in BLOCK_ALGORITHMS:
            return self.block_size or 1
        if self.algorithm in DRAFT_MODEL_ALGORITHMS:
            return self.num_draft_tokens or (self.num_steps or 0) + 1
        return 1

    def cost(self) -> tuple[int, int, int]:
        """Cheaper first: the verify step's size, then the tree's branching, then the drafter's depth."""
        return (self.verify_tokens, self.topk or self.eagle_topk or 1, self.block_size or self.num_steps or 0)

    def branch(self) -> tuple:
        """The unordered coordinates: points of one branch differ only along ORDERED_AXES (a baseline's or an
        EAGLE3/NEXTN point's settings are all its own: each is a branch of one)."""
        base = (self.algorithm, self.block_size, self.window, self.parallel, self.drafter)
        return base if self.algorithm in BLOCK_ALGORITHMS else (*base, self.num_steps, self.eagle_topk,
                                                                 self.num_draft_tokens)  # fmt: skip

    def coords(self) -> tuple[int, int]:
        return (self.budget or 0, self.topk or 0)

    def key(self) -> dict[str, Any]:
        """What identifies the point on disk (a row of another setting under the same name is not this point's)."""
        key = {"algorithm": self.algorithm, "block_size": self.block_size, "budget": self.budget, "topk": self.topk,
               "window": self.window, "parallel": self.parallel,
               "drafter": None if self.drafter is None else self.drafter.as_dict(),
               "vars": dict(self.extra_vars)}  # fmt: skip
        key.update({axis: getattr(self, axis) for axis in EAGLE_AXES if getattr(self, axis) is not None})
        return key

    def service_vars(self) -> dict[str, Any]:
        """The sglang_service_* variables this point deploys with (a sweep puts back what another point set)."""
        # Every axis's variable: its own algorithm's settings, null for the others (the inventory's, say DFLASH's block
        # size, must not reach a baseline or an EAGLE3 point), and no drafter without speculation.
        out = {name: getattr(self, axis) if axis == "algorithm" or axis in ALGORITHM_AXES[self.algorithm] else None
               for axis, name in AXIS_VARS.items()}  # fmt: skip
        if self.algorithm == BASELINE:
            out.update(dict.fromkeys(DRAFTER_VARS))
        out.update(dict(self.extra_vars))
        return out


def point_name(algorithm: str, block: int | None, budget: int | None, topk: int | None, *, window: int | None,
               parallel: str | None, drafter: Drafter | None = None,
               eagle: Mapping[str, int | None] | None = None) -> str:  # fmt: skip
    """The point's name; ``drafter`` only where a drafter axis sets it (the name says which drafter). Settings a grid
    leaves unset (SGLang's default) are left out of it."""
    eagle = eagle or {}
    if algorithm == "DDTREE":
        name = f"bs{block}" + (f"-b{budget}" if budget is not None else "") + (f"-t{topk}" if topk is not None else "")
    elif algorithm == BASELINE:
        name = "nospec"
    elif algorithm in DRAFT_MODEL_ALGORITHMS:
        name = ("mtp" if algorithm == "NEXTN" else algorithm.lower()) + "".join(
            f"-{short}{eagle[axis]}" for axis, short in (("num_steps", "s"), ("eagle_topk", "k"),
                                                        ("num_draft_tokens", "d")) if eagle.get(axis) is not None)
    else:
        name = f"{algorithm.lower()}-bs{block}"
    if window is not None:
        name += f"-w{window}"
    if parallel:
        name += f"-{parallel}"
    if drafter is not None:
        name += "-" + re.sub(r"[^A-Za-z0-9.-]+", "-", (drafter.name or drafter.label.rsplit("/", 1)[-1])).strip("-")
    return name


def _where(index: int, grid_name: str | None) -> str:
    return f"spec_sweep_grid[{index}]" + (f" ({grid_name})" if grid_name else "")


def _check_axis(where: str, axis: str, values: object) -> list:
    if axis not in AXES:
        raise GridError(f"{where}.axes.{axis}: unknown axis; the axes are {', '.join(AXES)}.")
    if not isinstance(values, list) or not values:
        raise GridError(f"{where}.axes.{axis}: give a non-empty list of values (got {values!r}).")
    if len({repr(v) for v in values}) != len(values):
        raise GridError(f"{where}.axes.{axis}: values repeat ({values!r}); list each once.")
    for value in values:
        if axis == "algorithm":
            if value not in ALGORITHMS:
                raise GridError(f"{where}.axes.algorithm: {value!r} is not one of {', '.join(ALGORITHMS)}.")
        elif axis == "parallel":
            if not isinstance(value, str) or not value:
                raise GridError(f"{where}.axes.parallel: {value!r} is not a preset name (a key of parallel_presets).")
        elif axis == "drafter":
            _drafter(f"{where}.axes", value)
        elif axis == "window":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise GridError(f"{where}.axes.window: {value!r} is not a window in tokens (a positive integer) "
                                "or null (no window).")  # fmt: skip
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GridError(f"{where}.axes.{axis}: {value!r} is not a positive integer.")
    return values


DRAFTER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def parse_drafter(where: str, raw: object) -> Drafter | None:
    """A drafter as a sweep names it: the name of an entry of model_weights_drafters (a string, or {name}), or
    {repo, revision} (a hub snapshot; with a name too, the name labels it). None: the weights stage's drafter."""
    if raw is None:
        return None
    usage = (f"give the name of an entry of model_weights_drafters (e.g. dflash-b16) or {{repo: <org>/<name>, "
             f"revision: <commit or tag>}} (got {raw!r})")  # fmt: skip
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, Mapping) or not (raw.get("name") or raw.get("repo")):
        raise GridError(f"{where}.drafter: {usage}.")
    unknown = set(raw) - {"name", "repo", "revision"}
    if unknown:
        raise GridError(f"{where}.drafter: unknown key(s) {', '.join(sorted(unknown))}; only name, repo and revision.")
    name, repo, revision = raw.get("name"), raw.get("repo"), raw.get("revision")
    if name is not None and (not isinstance(name, str) or not DRAFTER_NAME.match(name)):
        raise GridError(f"{where}.drafter.name: {name!r} is not a drafter's name (letters, digits, dots, dashes, "
                        "underscores), an entry of model_weights_drafters.")  # fmt: skip
    if repo is not None and (not isinstance(repo, str) or repo.count("/") != 1 or not all(repo.split("/"))):
        raise GridError(f"{where}.drafter.repo: {repo!r} is not a hub repo <org>/<name>; {usage}.")
    if revision is not None and not isinstance(revision, str):
        raise GridError(f"{where}.drafter.revision: {revision!r} is not a commit or tag (a string).")
    return Drafter(repo=repo, revision=revision or None, name=name)


def _drafter(where: str, raw: object) -> Drafter | None:
    return parse_drafter(where, raw)


def _constraints(where: str, raw: object) -> list[tuple[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(c, str) and c.strip() for c in raw):
        raise GridError(f"{where}.constraints: give a list of expressions over the axes, e.g. 'topk <= budget'.")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)  # constraints are not HTML
    compiled = []
    for text in raw:
        try:
            compiled.append((text, env.compile_expression(text)))
        except jinja2.TemplateSyntaxError as error:
            raise GridError(f"{where}.constraints: {text!r} is not an expression ({error.message}).") from error
    return compiled


def _subgrid(index: int, raw: object) -> list[Point]:
    if not isinstance(raw, Mapping):
        raise GridError(f"spec_sweep_grid[{index}]: give a mapping with axes (and optionally constraints, drafter, "
                        f"parallel_presets, vars); got {raw!r}.")  # fmt: skip
    where = _where(index, raw.get("name"))
    unknown = set(raw) - set(SUBGRID_KEYS)
    if unknown:
        raise GridError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                        f"the keys are {', '.join(SUBGRID_KEYS)}.")
    axes_raw = raw.get("axes")
    if not isinstance(axes_raw, Mapping) or not axes_raw:
        raise GridError(f"{where}.axes: give the axes to sweep, e.g. {{block_size: [8], budget: [4, 8]}}.")
    axes = {axis: _check_axis(where, axis, values) for axis, values in axes_raw.items()}
    axes.setdefault("algorithm", ["DDTREE"])
    for algorithm in axes["algorithm"]:
        foreign = sorted(set(axes) - {"algorithm", "parallel"} - ALGORITHM_AXES[algorithm]
                         - ({"drafter"} if algorithm != BASELINE else set()))  # fmt: skip
        if foreign:
            takes = ", ".join(sorted(ALGORITHM_AXES[algorithm])) or "no axis but parallel"
            raise GridError(f"{where}.axes: {', '.join(foreign)} do not apply to algorithm {algorithm} (it takes "
                            f"{takes}); sweep them in a sub-grid of their own algorithm.")  # fmt: skip
        if algorithm in BLOCK_ALGORITHMS and "block_size" not in axes:
            raise GridError(f"{where}.axes.block_size: missing; every {algorithm} point needs a block size.")
    if raw.get("drafter") is not None and BASELINE in axes["algorithm"]:
        raise GridError(f"{where}.drafter: a drafter for algorithm none (no speculation); drop it, or give the "
                        "baseline a sub-grid of its own.")  # fmt: skip
    presets = raw.get("parallel_presets") or {}
    if not isinstance(presets, Mapping):
        raise GridError(f"{where}.parallel_presets: give a mapping of preset name -> sglang_service_* variables.")
    for preset in axes.get("parallel", []):
        if preset not in presets:
            raise GridError(f"{where}.axes.parallel: preset {preset!r} is not in parallel_presets "
                            f"({', '.join(presets) or 'none given'}).")  # fmt: skip
    fixed = raw.get("vars") or {}
    drafter = _drafter(where, raw.get("drafter"))
    if "drafter" in axes and drafter is not None:
        raise GridError(f"{where}: a drafter axis and a drafter for the whole sub-grid; set one of them.")
    if "drafter" in axes or drafter is not None:
        for values in [fixed, *presets.values()]:
            given = [k for k in DRAFTER_VARS if isinstance(values, Mapping) and k in values]
            if given:
                raise GridError(f"{where}: {', '.join(given)} set beside the sub-grid's drafter; the drafter's path "
                                "and revision come from the weights stage's download, so drop them.")  # fmt: skip
    for where_vars, values in [(f"{where}.vars", fixed), *((f"{where}.parallel_presets.{k}", v)
                                                         for k, v in presets.items())]:  # fmt: skip
        if not isinstance(values, Mapping):
            raise GridError(f"{where_vars}: give a mapping of sglang_service_* variables.")
        bad = [k for k in values if not str(k).startswith("sglang_service_") or k in AXIS_VARS.values()
               or k == "sglang_service_promote_on_success"]  # fmt: skip
        if bad:
            raise GridError(f"{where_vars}: {', '.join(map(str, bad))} cannot be set here: only sglang_service_* "
                            "variables no axis sets, and never sglang_service_promote_on_success.")  # fmt: skip
    constraints = _constraints(where, raw.get("constraints"))
    names = list(axes)
    points = []
    for combo in itertools.product(*(axes[n] for n in names)):
        values = dict(zip(names, combo, strict=True))
        for unset in (*AXIS_VARS, "parallel"):
            values.setdefault(unset, None)
        point_drafter = _drafter(f"{where}.axes", values["drafter"]) if "drafter" in values else drafter
        if values["algorithm"] != "DDTREE" and (values["budget"] is not None or values["topk"] is not None):
            raise GridError(f"{where}.axes: budget and topk are DDTree settings; sweep them in a sub-grid whose "
                            "algorithm is DDTREE only.")  # fmt: skip
        keep = True
        for text, expression in constraints:
            try:
                keep = bool(expression(**values))
            except jinja2.UndefinedError as error:
                raise GridError(f"{where}.constraints: {text!r} names something that is not an axis "
                                f"({error.message}); the axes here are {', '.join(sorted(values))}.") from error
            if not keep:
                break
        if not keep:
            continue
        extra = dict(fixed)
        if values["parallel"]:
            extra.update(presets[values["parallel"]])
        eagle = {axis: values[axis] for axis in EAGLE_AXES}
        points.append(Point(
            name=point_name(values["algorithm"], values["block_size"], values["budget"], values["topk"],
                            window=values["window"], parallel=values["parallel"],
                            drafter=point_drafter if "drafter" in axes else None, eagle=eagle),
            algorithm=values["algorithm"], block_size=values["block_size"], budget=values["budget"],
            topk=values["topk"], window=values["window"], parallel=values["parallel"],
            drafter=None if values["algorithm"] == BASELINE else point_drafter,
            extra_vars=tuple(sorted(extra.items())), **eagle,
        ))  # fmt: skip
    if not points:
        raise GridError(f"{where}.constraints: no point of the axes meets every constraint; loosen one.")
    return points


def expand(grid: object) -> list[Point]:
    """Every point of ``spec_sweep_grid`` in order (sub-grids in order, axes as listed, the last axis fastest)."""
    subgrids: Sequence = grid if isinstance(grid, list) else [grid]
    if not subgrids:
        raise GridError("spec_sweep_grid: empty; give at least one sub-grid with axes.")
    points = [p for i, sub in enumerate(subgrids) for p in _subgrid(i, sub)]
    seen: dict[str, Point] = {}
    for point in points:
        if point.name in seen:
            raise GridError(f"spec_sweep_grid: point {point.name} comes out of two sub-grids (or twice from one); "
                            "give the sub-grids disjoint axes or constraints.")  # fmt: skip
        seen[point.name] = point
    return points


def drafters(points: Sequence[Point]) -> list[Drafter]:
    """The drafters the points name, once each, in order: all downloaded (and counted in the disk check) first."""
    out: list[Drafter] = []
    for point in points:
        if point.drafter is not None and point.drafter not in out:
            out.append(point.drafter)
    return out
