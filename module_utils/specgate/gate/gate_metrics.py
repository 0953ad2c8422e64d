"""Turn benchmark runs (schema specgate.bench/v1) and gate thresholds into the conditions the gate judges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Thresholds:
    min_accept_length: float | None = None
    accept_length_set: str = "code"
    accept_length_source: str = "request"
    min_correctness: float | None = None
    min_speedup: float | None = None
    speedup_cell: Cell | None = None
    max_regression: float | None = None
    regression_metric: str = "output_tok_s"
    regression_cell: Cell | None = None
    failure_limit: int | None = None


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


def build_conditions(
    runs: Sequence[Mapping],
    thresholds: Thresholds,
    baseline_runs: Sequence[Mapping] | None,
    known_good_runs: Sequence[Mapping] | None,
    known_good_label: str = "known-good runs",
) -> tuple[list[Condition], list[dict]]:
    """Conditions to judge, and the ones that cannot be judged here with the reason (no baseline yet…).

    The regression metric compares the candidate's runs with ``known_good_runs`` as two samples (ratio of their
    means, interval from both samples' noise; ``known_good_label`` says where they come from): ideally the
    known-good release measured in the same deploy, right before the switch, under the candidate's conditions."""
    if not runs:
        raise ValueError("the gate needs at least one benchmark run")
    t = thresholds
    conditions: list[Condition] = []
    skipped: list[dict] = []
    if t.min_accept_length is not None:
        conditions.append(
            Condition(
                name="accept_length",
                description=f"Acceptance length ({t.accept_length_source}-side, set {t.accept_length_set})",
                threshold=t.min_accept_length,
                values=tuple(accept_length_values(runs, t.accept_length_set, t.accept_length_source)),
                variable="spec_gate_min_accept_length",
                failure_limit=t.failure_limit,
            )
        )
    if t.min_correctness is not None:
        conditions.append(
            Condition(
                name="correctness",
                description="Coding-eval pass rate",
                threshold=t.min_correctness,
                values=tuple(correctness_values(runs)),
                variable="spec_gate_min_correctness",
                failure_limit=t.failure_limit,
            )
        )
    if t.min_speedup is not None:
        if t.speedup_cell is None:
            raise ValueError("spec_gate_min_speedup is set: spec_gate_speedup_cell must name the cell to compare")
        if not baseline_runs:
            skipped.append(
                {
                    "name": "speedup",
                    "variable": "spec_gate_min_speedup",
                    "reason": "no stored no-speculation baseline for this host and target "
                    "(run playbooks/bench.yml -e spec_gate_bench_store_baseline=true on a no-speculation release)",
                }
            )
        else:
            base = reference_value(baseline_runs, t.speedup_cell, "output_tok_s", "spec_gate_speedup_cell")
            conditions.append(
                Condition(
                    name="speedup",
                    description=f"Speedup of output tok/s over the no-speculation baseline ({t.speedup_cell.label()})",
                    threshold=t.min_speedup,
                    values=tuple(
                        cell_metric(r, t.speedup_cell, "output_tok_s", "spec_gate_speedup_cell") / base for r in runs
                    ),
                    variable="spec_gate_min_speedup",
                    failure_limit=t.failure_limit,
                )
            )
    if t.max_regression is not None:
        if t.regression_cell is None:
            raise ValueError("spec_gate_max_regression is set: spec_gate_regression_cell must name the cell to compare")
        if not known_good_runs:
            skipped.append(
                {
                    "name": "regression",
                    "variable": "spec_gate_max_regression",
                    "reason": "no gate result of a known-good release to compare with (first gated release)",
                }
            )
        else:
            conditions.append(
                Condition(
                    name="regression",
                    description=f"{t.regression_metric} relative to known-good ({t.regression_cell.label()})",
                    threshold=1.0 - t.max_regression,
                    values=tuple(
                        cell_metric(r, t.regression_cell, t.regression_metric, "spec_gate_regression_cell")
                        for r in runs
                    ),
                    variable="spec_gate_max_regression",
                    reference=tuple(
                        cell_metric(r, t.regression_cell, t.regression_metric, "spec_gate_regression_cell")
                        for r in known_good_runs
                    ),
                    reference_label=known_good_label,
                    fail_only_beyond_noise=True,
                )
            )
    return conditions, skipped
