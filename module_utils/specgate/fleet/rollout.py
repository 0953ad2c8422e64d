"""A rollout over a fleet: its policy (batches, failure budget, bake, a person's approval between batches), the verdict
at the end of each batch, and the fleet report.

Controller-side (filter_plugins/fleet_rollout.py). Ansible runs the batches (``serial``); what this decides is what
Ansible's own ``max_fail_percentage`` cannot: it is judged when every host of the batch has finished its gate (each
one promoted or restored), never in the middle of another host's switch, and an unreachable host counts as a failed
one (ansible#82834: ``any_errors_fatal`` lets a play go on past an unreachable host).

The fleet's unit is a replica (node_topology.Replica): a single host, or a node group whose nodes restart together.
Batches count replicas and never split one; Ansible's serial counts hosts, so the plan hands it each batch's host
count. The batch verdict and the report have one row per replica, merged from its nodes' rows.

A new policy is one place: RolloutPolicy holds every setting of how the fleet is rolled (read from the
fleet_rollout_* variables by ``from_settings``), refuses a bad one, and answers the questions the batches ask.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
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


def _nodes_in(batch_hosts: Sequence[str], nodes: Sequence[str]) -> list[str]:
    return [host for host in batch_hosts if host in nodes]


def replica_refusal(hosts: Sequence[str], replicas: Sequence[Mapping[str, Any]]) -> str:
    """'' when each node group's nodes among the play's ``hosts`` stand next to each other, else the refusal: Ansible's
    serial cuts the play's hosts in their order, so a group whose nodes are apart could be split by a batch."""
    for replica in replicas:
        nodes = list(replica["nodes"])
        at = [index for index, host in enumerate(hosts) if host in nodes]
        if len(nodes) > 1 and at and at[-1] - at[0] + 1 != len(at):
            between = [host for host in hosts[at[0]: at[-1] + 1] if host not in nodes]
            return (
                f"sglang_service_nodes_group: node group {replica['name']} ({', '.join(nodes)}) is one replica of the "
                f"fleet, but the play's hosts have {', '.join(between)} between its nodes; the rollout's batches cut "
                "the hosts in that order and could split the group, whose nodes restart together. Fix: list the "
                "group's nodes one after another in the inventory's sglang_hosts group."
            )
    return ""


def replica_batches(serial: Any, hosts: Sequence[str], replicas: Sequence[Mapping[str, Any]]) -> list[list[dict]]:
    """The batches of replicas ``serial`` makes (Ansible's rules over the replica count): each replica with its
    nodes in rank order and those in the play (``in_play``), in the play's order."""
    named = {str(replica["name"]): replica for replica in replicas}
    return [[{"name": name, "nodes": list(named[name]["nodes"]), "in_play": _nodes_in(hosts, named[name]["nodes"])}
             for name in batch] for batch in batches(list(named), serial)]  # fmt: skip


def label(name: str, nodes: Sequence[str]) -> str:
    """How a message names a replica: the host, or the group with its nodes (node_topology.Replica.label)."""
    return str(name) if list(nodes) == [name] else f"{name} ({', '.join(nodes)})"


def outcome_of(row: Mapping[str, Any] | None) -> str:
    return UNREACHABLE if not row else str(row.get("outcome", FAILED))


def replica_row(nodes: Sequence[str], rows: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """One replica's row from its nodes' rows (``nodes`` those of the play, rank 0 first): rank 0's, which holds the
    gate's verdict and the router's part, unless a node failed where rank 0 did not (that node's outcome and why,
    named) or left no row (unreachable). None when no node left one."""
    present = {node: dict(rows.get(node) or {}) for node in nodes if rows.get(node)}
    if not present:
        return None
    row = present.get(nodes[0]) or next(iter(present.values()))
    if outcome_of(row) in FAILING_OUTCOMES and nodes[0] in present:
        return row
    for node in nodes:
        outcome = outcome_of(present.get(node))
        if outcome == UNREACHABLE:
            return {**row, "outcome": UNREACHABLE, "message": f"node {node} became unreachable (or failed outside "
                    "the deploy block) before it reported a verdict"}  # fmt: skip
        if outcome in FAILING_OUTCOMES:
            return {**row, "outcome": outcome, "message": f"node {node}: {present[node].get('message') or outcome}"}
    return row


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
            f"Rollout stopped: {len(failed)} of {len(batch_hosts)} replica(s) in this batch failed "
            f"({share:.0f} % > fleet_rollout_max_fail_percentage {max_fail_percentage} %), so no later batch starts. "
            + " ".join(f"{reason}." if not reason.endswith(".") else reason for reason in reasons)
        )
    else:
        message = (
            f"{len(failed)} of {len(batch_hosts)} replica(s) in this batch failed ({share:.0f} %, within "
            f"fleet_rollout_max_fail_percentage {max_fail_percentage} %): the rollout goes on. " + " ".join(reasons)
        )
    return {"stop": stop, "failed": failed, "share": share, "message": message}


def report_rows(replicas: Sequence[Mapping[str, Any]], rows: Mapping[str, Mapping[str, Any] | None],
                reached: Sequence[str]) -> list[dict[str, Any]]:  # fmt: skip
    """One row per replica of the rollout (``replicas`` with their batch), in batch order: its row (``rows`` by
    replica name, replica_row's), or ``unreachable`` for a replica a batch reached that left none, or ``not started``
    for one no batch reached."""
    out = []
    for replica in replicas:
        row = rows.get(str(replica["name"])) or {
            "outcome": UNREACHABLE if replica["name"] in reached else NOT_STARTED}
        out.append({**row, "replica": replica["name"], "nodes": list(replica["nodes"]), "host": replica["nodes"][0],
                    "batch": replica["batch"]})  # fmt: skip
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


def _leave(row: Mapping[str, Any]) -> str:
    """How the replica left the router: the requests in flight on it then, and how long its drain waited on those
    still running once the router had let it go."""
    router = row.get("router") or {}
    if not router.get("removed"):
        return ""
    in_flight, waited_on, drained = (router.get(key) for key in ("in_flight_at_leave", "drain_waited_on", "drained_s"))
    parts = [] if in_flight in (None, "") else [f"{in_flight} in flight"]
    if drained not in (None, ""):
        on = "" if waited_on in (None, "") else f" ({waited_on} still running)"
        parts.append(f"drained in {float(drained):.1f} s{on}")
    return ", ".join(parts)


def report_markdown(rollout: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The fleet report a person reads: the plan, one line per replica, and why the rollout stopped if it did."""
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
        "| batch | replica | outcome | old release | new release | serving | verdict | numbers | left the router |",
        "|---:|---|---|---|---|---|---|---|---|",
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
                    row.get("batch"), label(row["replica"], row["nodes"]), row["outcome"], row.get("previous_release"),
                    row.get("candidate"), row.get("serving"), verdict, _numbers(row), _leave(row),
                )
            )
            + " |"
        )
    # Drawn beside this file by the report step (fleet_rollout_timeline), from Prometheus when one answers.
    lines += ["", "![Live acceptance and tokens/s per replica over the rollout, with each replica's leave, switch, "
              "gate and rejoin](timeline.png)"]
    return "\n".join(lines) + "\n"


def _whole(value: Any) -> int | None:
    """A whole number as Ansible may hand it over (an int, or its text from -e); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _flag(value: Any) -> bool | None:
    """A boolean as Ansible may hand it over (a bool, or yes/no/true/false text from -e); None for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False,
            "0": False}.get(text)  # fmt: skip


# Each policy field is set by the variable of this prefix and its name (fleet_rollout_bake_seconds).
VARIABLE_PREFIX = "fleet_rollout_"


@dataclass(frozen=True)
class RolloutPolicy:
    """How a fleet is rolled: the batches (Ansible's serial), the failure budget per batch, the bake after each gate,
    and whether a person approves each batch after the first. Each field is set by fleet_rollout_<field>."""

    serial: Any = field(default_factory=lambda: [1, "25%", "100%"])
    max_fail_percentage: int = 0
    bake_seconds: int = 0
    bake_interval: int = 5
    pause_between_batches: bool = False
    pause_timeout: int = 3600
    problems: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RolloutPolicy:
        """The policy of the fleet_rollout_* ``settings`` (values as typed or as -e text; a missing one keeps its
        default). A value of the wrong type becomes a problem ``refusal`` names, never a silent default."""
        values: dict[str, Any] = {}
        problems = []
        for spec in fields(cls):
            variable = VARIABLE_PREFIX + spec.name
            if spec.name == "problems" or variable not in settings:
                continue
            raw = settings[variable]
            if spec.type == "int":
                values[spec.name] = _whole(raw)
                if values[spec.name] is None:
                    problems.append(f"{variable}: {raw!r} is not a whole number. Fix: e.g. {spec.default}.")
                    del values[spec.name]
            elif spec.type == "bool":
                values[spec.name] = _flag(raw)
                if values[spec.name] is None:
                    problems.append(f"{variable}: {raw!r} is not true or false.")
                    del values[spec.name]
            else:  # serial: plain data (Ansible hands over its own lazy list types)
                values[spec.name] = list(raw) if isinstance(raw, (list, tuple)) else raw
        return cls(problems=tuple(problems), **values)

    def refusal(self) -> str:
        """'' when the policy can run, else every problem, each naming its variable and the fix."""
        problems = list(self.problems)
        if serial := validate_serial(self.serial):
            problems.append(serial)
        if not 0 <= self.max_fail_percentage <= 100:
            problems.append(
                f"fleet_rollout_max_fail_percentage: {self.max_fail_percentage} is not a percentage. "
                "Fix: 0 (any failed host stops the rollout) up to 100."
            )
        if self.bake_seconds < 0 or (self.bake_seconds > 0 and (
                self.bake_interval <= 0 or self.bake_seconds < 3 * self.bake_interval)):  # fmt: skip
            problems.append(
                f"fleet_rollout_bake_seconds: {self.bake_seconds} with fleet_rollout_bake_interval "
                f"{self.bake_interval} gives fewer than the 3 windows a failure needs. Fix: a bake of at least three "
                "intervals (e.g. 300 s at 5 s), or 0 for no bake."
            )
        if self.pause_between_batches and self.pause_timeout <= 0:
            problems.append(
                f"fleet_rollout_pause_timeout: {self.pause_timeout} leaves a person no time to approve a batch. "
                "Fix: the seconds to wait for an approval before the rollout stops (e.g. 3600)."
            )
        return " ".join(problems)

    def batches(self, hosts: Sequence[str]) -> list[list[str]]:
        return batches(hosts, self.serial)

    def verdict(self, batch_hosts: Sequence[str], rows: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
        return batch_verdict(batch_hosts, rows, self.max_fail_percentage)

    def waits_for_approval(self, batch_number: int, batch_count: int, verdict: Mapping[str, Any]) -> bool:
        """Whether a person approves the next batch before it starts: a batch that went on, with one after it."""
        return self.pause_between_batches and not verdict.get("stop") and batch_number < batch_count

    def as_fact(self) -> dict[str, Any]:
        """The policy's fields as the specgate_rollout fact carries them (from_fact reads them back)."""
        return {spec.name: getattr(self, spec.name) for spec in fields(self) if spec.name != "problems"}

    @classmethod
    def from_fact(cls, fact: Mapping[str, Any]) -> RolloutPolicy:
        return cls.from_settings({VARIABLE_PREFIX + spec.name: fact[spec.name] for spec in fields(cls)
                                  if spec.name in fact})  # fmt: skip


def plan(policy: RolloutPolicy, hosts: Sequence[str], replicas: Sequence[Mapping[str, Any]], *, rollout_id: str,
         router: str, reports_dir: str) -> dict[str, Any]:  # fmt: skip
    """The specgate_rollout fact: the policy; its batches of ``replicas`` (each with its nodes and batch number), the
    hosts of each batch and their count (what the deploy play's serial takes); the router and the report's directory.
    ``hosts`` are the play's in its order, with each node group's nodes next to each other (replica_refusal)."""
    by_batch = replica_batches(policy.serial, hosts, replicas)
    host_batches = [[host for replica in batch for host in replica["in_play"]] for batch in by_batch]
    return {"id": rollout_id, **policy.as_fact(),
            "replicas": [{**replica, "batch": number} for number, batch in enumerate(by_batch, start=1)
                         for replica in batch],
            "batches": host_batches, "batch_sizes": [len(batch) for batch in host_batches], "router": router,
            "reports_dir": f"{str(reports_dir).rstrip('/')}/{rollout_id}"}  # fmt: skip


def published(hostvars: Mapping[str, Any], hosts: Sequence[str], name: str) -> dict[str, Any]:
    """What each of ``hosts`` published as the fact ``name`` (None for a host without it: unreachable, or not reached
    yet), read from Ansible's hostvars."""
    return {host: value if isinstance(value, Mapping) else None
            for host, value in published_values(hostvars, hosts, name).items()}  # fmt: skip


def disagreeing(hostvars: Mapping[str, Any], hosts: Sequence[str]) -> list[str]:
    """The rollout settings (the policy's and the router) that differ between ``hosts`` in the inventory: the batches
    are one plan for the fleet, so a host-level value would make the hosts disagree on it."""
    names = [VARIABLE_PREFIX + spec.name for spec in fields(RolloutPolicy) if spec.name != "problems"]
    names.append(VARIABLE_PREFIX + "router")
    out = []
    for name in names:
        values = {repr(row) for row in published_values(hostvars, hosts, name).values()}
        if len(values) > 1:
            out.append(name)
    return out


def published_values(hostvars: Mapping[str, Any], hosts: Sequence[str], name: str) -> dict[str, Any]:
    """Each host's own value of ``name`` in Ansible's hostvars (None where it has none)."""
    out: dict[str, Any] = {}
    for host in hosts:
        facts = hostvars.get(host) if hasattr(hostvars, "get") else None
        value = facts.get(name) if facts is not None and hasattr(facts, "get") else None
        out[host] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """Ansible's lazy containers as plain data."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _replica_rows(rollout: Mapping[str, Any], hostvars: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each replica's row (replica_row over its nodes' published specgate_rollout_row), by replica name."""
    nodes = [host for batch in rollout["batches"] for host in batch]
    rows = published(hostvars, nodes, "specgate_rollout_row")
    return {str(replica["name"]): replica_row(list(replica["in_play"]), rows) for replica in rollout["replicas"]}


def batch_end(rollout: Mapping[str, Any], hostvars: Mapping[str, Any], host: str) -> dict[str, Any]:
    """At the end of ``host``'s batch: the batch's verdict over its replicas' rows (a replica without one counts as
    failed), with the batch's number, the replicas promoted so far, those no batch reached yet, and whether a person
    approves the next batch before it starts. Replicas are named by label (a group with its nodes)."""
    replicas = list(rollout["replicas"])
    number = next(int(replica["batch"]) for replica in replicas if host in replica["in_play"])
    count = len(rollout["batches"])
    policy = RolloutPolicy.from_fact(rollout)
    rows = {label(replica["name"], replica["nodes"]): row
            for replica, row in zip(replicas, _replica_rows(rollout, hostvars).values(), strict=True)}
    names = {int(batch): [label(r["name"], r["nodes"]) for r in replicas if int(r["batch"]) == batch]
             for batch in range(1, count + 1)}
    verdict = policy.verdict(names[number], {name: rows[name] for name in names[number]})
    return {**verdict, "number": number, "batch_count": count,
            "promoted": [name for name, row in rows.items() if outcome_of(row) == PROMOTED],
            "not_started": [name for batch in range(number + 1, count + 1) for name in names[batch]],
            "next_batch": names.get(number + 1, []),
            "waits_for_approval": policy.waits_for_approval(number, count, verdict)}  # fmt: skip


def report(rollout: Mapping[str, Any], hostvars: Mapping[str, Any], batch_number: int, stopped: str = "") -> dict:
    """The fleet report after batch ``batch_number``: {'json': the plan and one row per replica, 'markdown': the
    table}. Every replica of the rollout has a row: its nodes' merged one, unreachable (a batch reached it, it left
    none) or not started."""
    replicas = list(rollout["replicas"])
    reached = [str(replica["name"]) for replica in replicas if int(replica["batch"]) <= int(batch_number)]
    rows = report_rows(replicas, _replica_rows(rollout, hostvars), reached)
    shown = {**rollout, "stopped": stopped}
    return {"json": {"rollout": shown, "replicas": rows}, "markdown": report_markdown(shown, rows)}
