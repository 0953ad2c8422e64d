"""Filters: a sweep config's benchmark → its row; the rows → winners and the markdown report (logic in sweep_report)."""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.sweep.sweep_report import (
    failed_row,
    rejected_row,
    repeat_values,
    summarize,
    sweep_markdown,
    winners,
    with_repeats,
)


def spec_sweep_row(bench: dict[str, Any], name: str, release: str) -> dict[str, Any]:
    """`{{ bench_result | spec_sweep_row(name, release) }}`."""
    try:
        return summarize(name, release, bench)
    except (KeyError, ValueError) as error:
        raise AnsibleFilterError(f"spec_sweep_row: {error}") from error


def spec_sweep_with_repeats(row: dict[str, Any], bench: dict[str, Any], wanted: dict[str, int]) -> dict[str, Any]:
    """`{{ row | spec_sweep_with_repeats(repeat_bench_result, wanted) }}`: the row with the repeat benchmark's runs
    added to each wanted use case metric (as many as wanted of it)."""
    try:
        values = repeat_values(row, bench, list(wanted))
    except (KeyError, ValueError) as error:
        raise AnsibleFilterError(f"spec_sweep_with_repeats: {error}") from error
    return with_repeats(row, {metric: runs[: int(wanted[metric])] for metric, runs in values.items()})


def spec_sweep_failed_row(reason: str, name: str, release: str | None = None,
                          point: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """`{{ reason | spec_sweep_failed_row(name, release, point) }}`."""
    return failed_row(name, release, reason, point)


def spec_sweep_rejected_row(message: str, name: str, point: dict[str, Any] | None = None,
                            by: str = "sglang") -> dict[str, Any]:  # fmt: skip
    """`{{ message | spec_sweep_rejected_row(name, point, by) }}`: a point refused before any launch, never launched;
    ``by`` says who refused it (sglang, settings or fit)."""
    try:
        return rejected_row(name, point, message, by)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from error


def spec_sweep_winners(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return winners(rows)


def spec_sweep_markdown(rows: list[dict[str, Any]], sweep_id: str, host: str) -> str:
    """`{{ rows | spec_sweep_markdown(sweep_id, host) }}`."""
    return sweep_markdown(sweep_id, host, rows, winners(rows))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "spec_sweep_row": spec_sweep_row,
            "spec_sweep_with_repeats": spec_sweep_with_repeats,
            "spec_sweep_failed_row": spec_sweep_failed_row,
            "spec_sweep_rejected_row": spec_sweep_rejected_row,
            "spec_sweep_winners": spec_sweep_winners,
            "spec_sweep_markdown": spec_sweep_markdown,
        }
