"""Turn benchmark runs (schema specgate.bench/v1) and gate thresholds into the conditions the gate judges."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.specgate.common.ranges import as_number, first_range_refusal
from ansible.module_utils.specgate.gate.gate_decision import Condition

ACCEPT_SOURCES = ("request", "server")
CELL_METRICS = ("output_tok_s", "request_per_s")


@dataclass(frozen=True)
class Cell:
    set: str
    context: str
    concurrency: int

    @classmethod
    def from_mapping(cls, data: Mapping, variable: str) -> Cell:
        missing = [k for k in ("set", "context", "concurrency") if k not in data]
        if missing:
            raise ValueError(
                f"{variable} needs keys set, context and concurrency (missing: {', '.join(missing)}); "
                f"e.g. {{set: chat, context: short, concurrency: 1}}"
            )
        return cls(str(data["set"]), str(data["context"]), int(data["concurrency"]))

    def label(self) -> str:
        return f"set {self.set}, {self.context} context, C={self.concurrency}"


def find_cell(run: Mapping, cell: Cell, variable: str) -> Mapping:
    for c in run.get("cells", []):
        if c["set"] == cell.set and c["context"] == cell.context and int(c["concurrency"]) == cell.concurrency:
            return c
    have = sorted({(c["set"], c["context"], int(c["concurrency"])) for c in run.get("cells", [])})
    raise ValueError(
        f"{variable} names a cell the benchmark did not run ({cell.label()}); cells run: "
        + ", ".join(f"{s}/{ctx}/C={cc}" for s, ctx, cc in have)
        + ". Pick one of these or add it to spec_gate_bench_sets / spec_gate_bench_contexts / "
        "spec_gate_bench_concurrency."
    )


def cell_metric(run: Mapping, cell: Cell, metric: str, variable: str) -> float:
    if metric not in CELL_METRICS:
        raise ValueError(f"spec_gate_regression_metric must be one of {', '.join(CELL_METRICS)}, got {metric!r}")
    value = find_cell(run, cell, variable).get(metric)
    if value is None:
        raise ValueError(f"{variable}: cell {cell.label()} has no {metric} (every request of it failed)")
    return float(value)


def reference_value(runs: Sequence[Mapping], cell: Cell, metric: str, variable: str) -> float:
    """Mean of a stored result (baseline or known-good) on one cell: the fixed point a candidate is compared to."""
    values = [cell_metric(r, cell, metric, variable) for r in runs]
    return sum(values) / len(values)


def accept_length_values(runs: Sequence[Mapping], set_name: str, source: str) -> list[float]:
    if source not in ACCEPT_SOURCES:
        raise ValueError(f"spec_gate_accept_length_source must be one of {', '.join(ACCEPT_SOURCES)}, got {source!r}")
    key = f"accept_length_{source}"
    values = []
    for r in runs:
        sets = r.get("sets", {})
        if set_name not in sets:
            raise ValueError(
                f"spec_gate_accept_length_set is {set_name!r}, but the benchmark ran only the sets "
                f"{', '.join(sorted(sets)) or '(none)'}; add it to spec_gate_bench_sets or pick one of those"
            )
        value = sets[set_name].get(key)
        if value is None:
            raise ValueError(
                f"the server reported no {source}-side acceptance length for set {set_name!r}: is speculative "
                "decoding enabled in this release? (spec_gate_min_accept_length applies only to speculative releases)"
            )
        values.append(float(value))
    return values


def correctness_values(runs: Sequence[Mapping]) -> list[float]:
    values = []
    for r in runs:
        ev = r.get("eval")
        if not ev or not ev.get("problems"):
            raise ValueError(
                "spec_gate_min_correctness is set but the benchmark ran no coding eval: set spec_gate_bench_eval: true"
            )
        values.append(float(ev["pass_rate"]))
    return values


# The gate's settings by their short names (min_accept_length for spec_gate_min_accept_length): what the gate module
# takes, what gate.json stores as its thresholds, and what a settled release is compared on.
VARIABLE_PREFIX = "spec_gate_"
Settings = Mapping[str, Any]


@dataclass(frozen=True)
class References:
    """What a candidate's runs may be compared with: the stored no-speculation baseline, the known-good runs."""

    baseline_runs: Sequence[Mapping] | None = None
    known_good_runs: Sequence[Mapping] | None = None
    known_good_label: str = "known-good runs"


@dataclass(frozen=True)
class GateMetric:
    """One gated metric: its threshold setting (and its range, judged before any change), the other settings that
    shape its measurement (with defaults), what it needs besides the runs, and how its condition is built. Adding a
    metric is one entry of GATE_METRICS (plus its variables in the role's argument_specs)."""

    name: str
    threshold: str  # the short name of its threshold setting; null turns the metric off
    unit: str
    range: Mapping[str, Any]
    condition: Callable[[Sequence[Mapping], Settings, References], Condition]
    settings: tuple[str, ...] = ()  # the other settings it reads, by short name (declared by the role with defaults)
    cell: str = ""  # the setting (of ``settings``) naming the benchmark cell it is measured on, checked when it is on
    needs: str = ""  # a reference the condition cannot be judged without: "baseline" or "known_good"
    missing: str = ""  # why it is skipped when that reference is missing

    @property
    def variable(self) -> str:
        return VARIABLE_PREFIX + self.threshold


def _float(settings: Settings, key: str) -> float:
    return float(settings[key])


def _limit(settings: Settings) -> int | None:
    limit = settings.get("failure_limit")
    return None if limit is None else int(limit)


def _cell(settings: Settings, key: str, metric_variable: str) -> Cell:
    if not settings.get(key):
        raise ValueError(f"{metric_variable} is set: {VARIABLE_PREFIX}{key} must name the cell to compare")
    return Cell.from_mapping(settings[key], VARIABLE_PREFIX + key)


def _accept_length(runs: Sequence[Mapping], s: Settings, _refs: References) -> Condition:
    source, set_name = s.get("accept_length_source") or "request", s.get("accept_length_set") or "code"
    return Condition(
        name="accept_length", description=f"Acceptance length ({source}-side, set {set_name})",
        threshold=_float(s, "min_accept_length"), values=tuple(accept_length_values(runs, set_name, source)),
        variable="spec_gate_min_accept_length", failure_limit=_limit(s),
    )  # fmt: skip


def _correctness(runs: Sequence[Mapping], s: Settings, _refs: References) -> Condition:
    return Condition(
        name="correctness", description="Coding-eval pass rate", threshold=_float(s, "min_correctness"),
        values=tuple(correctness_values(runs)), variable="spec_gate_min_correctness", failure_limit=_limit(s),
    )  # fmt: skip


def _speedup(runs: Sequence[Mapping], s: Settings, refs: References) -> Condition:
    cell = _cell(s, "speedup_cell", "spec_gate_min_speedup")
    base = reference_value(refs.baseline_runs or (), cell, "output_tok_s", "spec_gate_speedup_cell")
    return Condition(
        name="speedup", description=f"Speedup of output tok/s over the no-speculation baseline ({cell.label()})",
        threshold=_float(s, "min_speedup"),
        values=tuple(cell_metric(r, cell, "output_tok_s", "spec_gate_speedup_cell") / base for r in runs),
        variable="spec_gate_min_speedup", failure_limit=_limit(s),
    )  # fmt: skip


def _regression(runs: Sequence[Mapping], s: Settings, refs: References) -> Condition:
    cell = _cell(s, "regression_cell", "spec_gate_max_regression")
    metric = s.get("regression_metric") or "output_tok_s"
    return Condition(
        name="regression", description=f"{metric} relative to known-good ({cell.label()})",
        threshold=1.0 - _float(s, "max_regression"),
        values=tuple(cell_metric(r, cell, metric, "spec_gate_regression_cell") for r in runs),
        variable="spec_gate_max_regression",
        reference=tuple(cell_metric(r, cell, metric, "spec_gate_regression_cell") for r in refs.known_good_runs or ()),
        reference_label=refs.known_good_label, fail_only_beyond_noise=True,
    )  # fmt: skip


GATE_METRICS: tuple[GateMetric, ...] = (
    GateMetric(
        name="accept_length", threshold="min_accept_length", unit="tokens per verify step",
        range={"min": 1, "null": True, "means": "tokens per verify step with the bonus token", "example": 3},
        settings=("accept_length_set", "accept_length_source"), condition=_accept_length,
    ),
    GateMetric(
        name="correctness", threshold="min_correctness", unit="pass rate",
        range={"min": 0, "max": 1, "null": True, "means": "a pass rate", "example": 0.9}, condition=_correctness,
    ),
    GateMetric(
        name="speedup", threshold="min_speedup", unit="x the baseline",
        range={"above": 0, "null": True, "means": "candidate over baseline tok/s", "example": 1.2},
        settings=("speedup_cell",), cell="speedup_cell", condition=_speedup, needs="baseline",
        missing="no stored no-speculation baseline for this host and target (run playbooks/bench.yml -e "
                "spec_gate_bench_store_baseline=true on a no-speculation release)",
    ),
    GateMetric(
        name="regression", threshold="max_regression", unit="fraction of known-good",
        range={"min": 0, "below": 1, "null": True, "means": "a fraction", "example": "0.1 for 10 %"},
        settings=("regression_metric", "regression_cell"), cell="regression_cell",
        condition=_regression,
        needs="known_good", missing="no gate result of a known-good release to compare with (first gated release)",
    ),
)  # fmt: skip
# Settings every metric reads, and their ranges.
SHARED_SETTINGS: tuple[str, ...] = ("failure_limit",)
SHARED_RANGES: Mapping[str, Mapping[str, Any]] = {
    "failure_limit": {"integer": True, "min": 0, "null": True, "means": "failed requests allowed", "example": 0},
}


def threshold_keys() -> list[str]:
    """Every setting a verdict depends on, by short name: a release gated with other values is not settled."""
    keys: list[str] = []
    for metric in GATE_METRICS:
        keys += [metric.threshold, *metric.settings]
    return keys + list(SHARED_SETTINGS)


def thresholds_of(settings: Settings) -> dict[str, Any]:
    """The gate's thresholds by short name, from ``settings`` keyed by short or by full variable name (the role's
    spec_gate_* values, defaults included); a missing one is null (a threshold: off; a setting: the metric's own
    fallback)."""
    out = {}
    for key in threshold_keys():
        out[key] = settings[VARIABLE_PREFIX + key] if VARIABLE_PREFIX + key in settings else settings.get(key)
    return out


def threshold_refusal(settings: Settings) -> str:
    """'' when every threshold is in its range, else the sentence naming the first that is not."""
    values = thresholds_of(settings)
    rules = {**{m.variable: m.range for m in GATE_METRICS},
             **{VARIABLE_PREFIX + key: rule for key, rule in SHARED_RANGES.items()}}  # fmt: skip
    return first_range_refusal(rules, [values[name[len(VARIABLE_PREFIX):]] for name in rules])


def same_thresholds(stored: Settings | None, settings: Settings) -> bool:
    """Whether a stored gate result (gate.json's thresholds) was judged with the thresholds ``settings`` give now.
    Numbers compare as numbers (0.1 from -e text equals 0.1)."""
    if not stored:
        return False
    current = thresholds_of(settings)

    def same(a: Any, b: Any) -> bool:
        x, y = as_number(a), as_number(b)
        if x is not None or y is not None:
            return x == y
        return a == b

    return all(same(stored.get(key), current.get(key)) for key in threshold_keys())


def build_conditions(
    runs: Sequence[Mapping],
    settings: Settings,
    baseline_runs: Sequence[Mapping] | None = None,
    known_good_runs: Sequence[Mapping] | None = None,
    known_good_label: str = "known-good runs",
) -> tuple[list[Condition], list[dict]]:
    """Conditions to judge (one per metric of GATE_METRICS whose threshold is set), and the ones that cannot be
    judged here with the reason (no baseline yet…).

    The regression metric compares the candidate's runs with ``known_good_runs`` as two samples (ratio of their
    means, interval from both samples' noise; ``known_good_label`` says where they come from): ideally the
    known-good release measured in the same deploy, right before the switch, under the candidate's conditions."""
    if not runs:
        raise ValueError("the gate needs at least one benchmark run")
    values = thresholds_of(settings)
    refs = References(baseline_runs, known_good_runs, known_good_label)
    have = {"baseline": bool(baseline_runs), "known_good": bool(known_good_runs)}
    conditions: list[Condition] = []
    skipped: list[dict] = []
    for metric in GATE_METRICS:
        if values[metric.threshold] is None:
            continue
        if metric.needs and not have[metric.needs]:
            if metric.cell:  # an unnamed cell is a settings error whether or not the reference exists yet
                _cell(values, metric.cell, metric.variable)
            skipped.append({"name": metric.name, "variable": metric.variable, "reason": metric.missing})
            continue
        conditions.append(metric.condition(runs, values, refs))
    return conditions, skipped
