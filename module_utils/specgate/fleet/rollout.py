"""A rollout over a fleet: the batches, the verdict at the end of each batch, and the fleet report.

Controller-side (filter_plugins/fleet_rollout.py). Ansible runs the batches (``serial``); what this decides is what
Ansible's own ``max_fail_percentage`` cannot: it is judged when every host of the batch has finished its gate (each
one promoted or restored), never in the middle of another host's switch, and an unreachable host counts as a failed
one (ansible#82834: ``any_errors_fatal`` lets a play go on past an unreachable host).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

# What a host's row says happened to it, as the report and the batch verdict read it.
PROMOTED = "promoted"  # the candidate passed its gate and serves
UNCHANGED = "unchanged"  # the candidate already was the known-good release: nothing switched
ROLLED_BACK = "rolled back"  # the candidate failed its gate (or its bake): known-good serves again
FAILED = "failed"  # the run failed on the host before a verdict (a stage, the router, the lock)
UNREACHABLE = "unreachable"  # no row: the host dropped out of the play (unreachable, or failed outside the block)
NOT_STARTED = "not started"  # a later batch the rollout never reached
CHECKED = "checked"  # check mode: nothing changed

FAILING_OUTCOMES = frozenset({ROLLED_BACK, FAILED, UNREACHABLE})


def validate_serial(serial: Any) -> str:
    """'' when ``serial`` is what Ansible's play keyword takes (an int, a percentage, or a list of them), else the
    refusal naming the variable."""
    items = serial if isinstance(serial, list) else [serial]
    if not items:
        return "fleet_rollout_serial: an empty list. Fix: e.g. [1, '25%', '100%'] (one canary, a quarter, the rest)."
    for item in items:
        if isinstance(item, bool):
            break
        if isinstance(item, int) and item > 0:
            continue
        if isinstance(item, str):
            text = item.strip()
            if text.endswith("%") and text[:-1].strip().isdigit() and 0 < int(text[:-1]) <= 100:
                continue
            if text.isdigit() and int(text) > 0:
                continue
        break
    else:
        return ""
    return (
        f"fleet_rollout_serial: {serial!r} is not a batch plan: each entry is a host count (> 0) or a percentage "
        "('25%'). Fix: e.g. [1, '25%', '100%'] (one canary in its own batch, then a quarter, then the rest)."
    )


def batches(hosts: Sequence[str], serial: Any) -> list[list[str]]:
    """The batches Ansible makes of ``hosts`` for ``serial`` (ansible/executor/playbook_executor.py
    ``_get_serialized_batches``: a percentage of all hosts, at least one; the last entry repeats)."""
    items = serial if isinstance(serial, list) else [serial]
    remaining = list(hosts)
    out: list[list[str]] = []
    index = 0
    while remaining:
        item = items[min(index, len(items) - 1)]
        text = str(item).strip()
        # pct_to_int (ansible/utils/helpers.py): a share of all the play's hosts, at least one.
        size = (int((int(text[:-1]) / 100.0) * len(hosts)) or 1) if text.endswith("%") else int(text)
        out.append(remaining[:size])
        remaining = remaining[size:]
        index += 1
    return out


def hosts_through(plan_batches: Sequence[Sequence[str]], number: int) -> list[str]:
    """The hosts of batches 1..number (those the rollout reached)."""
    return [host for batch in plan_batches[: int(number)] for host in batch]


def hosts_after(plan_batches: Sequence[Sequence[str]], number: int) -> list[str]:
    """The hosts of the batches after ``number`` (those a stop leaves untouched)."""
    return [host for batch in plan_batches[int(number) :] for host in batch]


def outcome_of(row: Mapping[str, Any] | None) -> str:
    return UNREACHABLE if not row else str(row.get("outcome", FAILED))


def batch_verdict(
    batch_hosts: Sequence[str], rows: Mapping[str, Mapping[str, Any] | None], max_fail_percentage: int
) -> dict[str, Any]:
    """Whether the rollout goes on after this batch: it stops when the share of the batch's hosts that failed
    (rolled back, failed, or unreachable) *exceeds* ``max_fail_percentage``, as Ansible's keyword reads it.

    Returns ``{stop, failed: [host], message}``; the message is one paragraph naming each failed host and why."""
    failed = [host for host in batch_hosts if outcome_of(rows.get(host)) in FAILING_OUTCOMES]
    share = 100.0 * len(failed) / len(batch_hosts) if batch_hosts else 0.0
    stop = bool(failed) and share > max_fail_percentage
    reasons = []
    for host in failed:
        row = rows.get(host) or {}
        outcome = outcome_of(row)
        why = str(row.get("message") or "").strip()
        if outcome == UNREACHABLE:
            why = "it became unreachable (or failed outside the deploy block) before it reported a verdict"
        reasons.append(f"{host} {outcome}: {why or 'no reason recorded'}")
    if not failed:
        message = ""
    elif stop:
        message = (
            f"Rollout stopped: {len(failed)} of {len(batch_hosts)} host(s) in this batch failed "
            f"({share:.0f} % > fleet_rollout_max_fail_percentage {max_fail_percentage} %), so no later batch starts. "
            + " ".join(f"{reason}." if not reason.endswith(".") else reason for reason in reasons)
        )
    else:
        message = (
            f"{len(failed)} of {len(batch_hosts)} host(s) in this batch failed ({share:.0f} %, within "
            f"fleet_rollout_max_fail_percentage {max_fail_percentage} %): the rollout goes on. " + " ".join(reasons)
        )
    return {"stop": stop, "failed": failed, "share": share, "message": message}


def report_rows(
    hosts: Sequence[str], serial: Any, rows: Mapping[str, Mapping[str, Any] | None], reached: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per host of the rollout, in batch order: its own row, or ``unreachable`` for a host a batch reached
    that left none, or ``not started`` for a host no batch reached."""
    out = []
    for number, batch in enumerate(batches(hosts, serial), start=1):
        for host in batch:
            row = dict(rows.get(host) or {})
            if not row:
                row = {"outcome": UNREACHABLE if host in reached else NOT_STARTED}
            row.update({"host": host, "batch": number})
            out.append(row)
    return out


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ") or "—"


def _numbers(row: Mapping[str, Any]) -> str:
    parts = []
    for metric in row.get("metrics") or []:
        mean = metric.get("mean")
        shown = "—" if mean is None or (isinstance(mean, float) and math.isnan(mean)) else f"{float(mean):.3g}"
        parts.append(f"{metric.get('name')} {shown} ({metric.get('success_condition', '')})".strip())
    bake = row.get("bake") or {}
    if bake.get("samples"):
        parts.append(f"live acceptance {bake.get('min_accept_length')} min over {bake.get('seconds')} s")
    return "; ".join(parts)


def report_markdown(rollout: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The fleet report a person reads: the plan, one line per host, and why the rollout stopped if it did."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    lines = [
        f"# Fleet rollout {rollout.get('id', '')}",
        "",
        f"- batches: {rollout.get('serial')} (fleet_rollout_serial); failure budget per batch: "
        f"{rollout.get('max_fail_percentage')} % (fleet_rollout_max_fail_percentage)",
        f"- router: {rollout.get('router') or 'none (fleet_rollout_router is empty)'}",
        "- outcome: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())),
    ]
    if rollout.get("stopped"):
        lines += ["", f"**Stopped:** {rollout['stopped']}"]
    lines += [
        "",
        "| batch | host | outcome | old release | new release | serving | verdict | numbers |",
        "|---:|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        verdict = row.get("verdict") or ""
        if row.get("message") and row["outcome"] in FAILING_OUTCOMES:
            verdict = f"{verdict}: {row['message']}" if verdict else row["message"]
        lines.append(
            "| "
            + " | ".join(
                _cell(v)
                for v in (
                    row.get("batch"), row["host"], row["outcome"], row.get("previous_release"),
                    row.get("candidate"), row.get("serving"), verdict, _numbers(row),
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"
