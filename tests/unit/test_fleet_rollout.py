"""A fleet rollout's plan and verdicts: Ansible's own batches for serial, the go/no-go at the end of a batch (a
failure budget that must be exceeded, unreachable hosts counted), and the report's rows and table."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.fleet.rollout import (
    RolloutPolicy,
    batch_end,
    batch_verdict,
    batches,
    plan,
    replica_refusal,
    replica_row,
    report,
    report_markdown,
    validate_serial,
)

pytestmark = pytest.mark.host

HOSTS = [f"h{i}" for i in range(1, 9)]


@pytest.mark.parametrize(
    ("serial", "expected"),
    [
        ([1, "25%", "100%"], [["h1"], ["h2", "h3"], ["h4", "h5", "h6", "h7", "h8"]]),
        (1, [[h] for h in HOSTS]),
        (["100%"], [HOSTS]),
        ([1, 3], [["h1"], ["h2", "h3", "h4"], ["h5", "h6", "h7"], ["h8"]]),
        (["10%"], [[h] for h in HOSTS]),  # 10 % of 8 is 0.8: at least one host a batch
    ],
)
def test_batches_are_ansibles(serial, expected) -> None:
    assert batches(HOSTS, serial) == expected


def test_batches_match_ansibles_own_executor() -> None:
    from ansible.utils.helpers import pct_to_int

    for serial in ([1, "25%", "100%"], ["33%"], [2, "50%"], ["1%", "99%"]):
        remaining, expected, item = list(HOSTS), [], 0
        while remaining:
            size = pct_to_int(serial[min(item, len(serial) - 1)], len(HOSTS))
            expected.append(remaining[:size])
            remaining = remaining[size:]
            item += 1
        assert batches(HOSTS, serial) == expected, serial


def test_one_host_is_one_batch() -> None:
    assert batches(["ct200"], [1, "25%", "100%"]) == [["ct200"]]


@pytest.mark.parametrize("serial", [[1, "25%", "100%"], 1, "50%", ["100%"], [2, "3"]])
def test_valid_serial(serial) -> None:
    assert validate_serial(serial) == ""


@pytest.mark.parametrize("serial", [[], [0], ["0%"], ["150%"], ["quarter"], [True], [-1], [1.5]])
def test_invalid_serial_names_the_variable(serial) -> None:
    message = validate_serial(serial)
    assert message.startswith("fleet_rollout_serial:")
    assert "Fix:" in message


def _row(outcome: str, message: str = "") -> dict:
    return {"outcome": outcome, "message": message}


def test_a_batch_of_promoted_hosts_goes_on() -> None:
    verdict = batch_verdict(["a", "b"], {"a": _row("promoted"), "b": _row("unchanged")}, 0)
    assert verdict == {"stop": False, "failed": [], "share": 0.0, "message": ""}


def test_the_canarys_rollback_stops_the_rollout_and_names_host_and_reason() -> None:
    reason = "Acceptance length measured 1.02; the gate requires at least 3 (spec_gate_min_accept_length) — Failed"
    verdict = batch_verdict(["canary"], {"canary": _row("rolled back", reason)}, 0)
    assert verdict["stop"] is True
    assert verdict["failed"] == ["canary"]
    assert "canary rolled back" in verdict["message"]
    assert "spec_gate_min_accept_length" in verdict["message"]
    assert "no later batch starts" in verdict["message"]


def test_an_unreachable_host_has_no_row_and_counts_as_failed() -> None:
    verdict = batch_verdict(["a", "b"], {"a": _row("promoted"), "b": None}, 0)
    assert verdict["stop"] is True
    assert verdict["failed"] == ["b"]
    assert "unreachable" in verdict["message"]


def test_the_failure_budget_must_be_exceeded_as_ansibles_keyword_reads_it() -> None:
    rows = {"a": _row("failed", "weights download failed"), "b": _row("promoted"), "c": _row("promoted"),
            "d": _row("promoted")}
    hosts = ["a", "b", "c", "d"]
    at_budget = batch_verdict(hosts, rows, 25)
    assert at_budget["stop"] is False  # 25 % failed, 25 % allowed: not exceeded
    assert "goes on" in at_budget["message"]
    assert batch_verdict(hosts, rows, 24)["stop"] is True


def test_check_mode_rows_never_fail_a_batch() -> None:
    assert batch_verdict(["a"], {"a": _row("checked")}, 0)["stop"] is False


def single(*names: str) -> list[dict]:
    return [{"name": name, "nodes": [name]} for name in names]


PAIR = {"name": "pair", "nodes": ["p0", "p1"]}


def a_plan(hosts: list[str], replicas: list[dict], serial) -> dict:
    return plan(RolloutPolicy(serial=serial), hosts, replicas, rollout_id="r1", router="lb", reports_dir="/r")


def test_batches_count_replicas_and_the_serial_ansible_runs_counts_their_nodes() -> None:
    rollout = a_plan(["p0", "p1", "a", "b", "c"], [PAIR, *single("a", "b", "c")], [1, "50%", "100%"])
    assert rollout["batches"] == [["p0", "p1"], ["a", "b"], ["c"]]
    assert rollout["batch_sizes"] == [2, 2, 1]
    assert [(r["name"], r["batch"]) for r in rollout["replicas"]] == [("pair", 1), ("a", 2), ("b", 2), ("c", 3)]
    assert batches(["p0", "p1", "a", "b", "c"], rollout["batch_sizes"]) == rollout["batches"]  # Ansible's cut


def test_a_node_group_whose_nodes_stand_apart_in_the_play_is_refused_naming_what_stands_between() -> None:
    message = replica_refusal(["p0", "a", "p1"], [PAIR, *single("a")])
    assert message.startswith("sglang_service_nodes_group: node group pair (p0, p1) is one replica")
    assert "have a between its nodes" in message
    assert "Fix: list the group's nodes one after another" in message
    assert replica_refusal(["a", "p1", "p0"], [*single("a"), PAIR]) == ""


def test_a_replicas_row_is_rank_0s_unless_another_node_failed_or_left_none() -> None:
    rank0 = {**_row("promoted"), "verdict": "Successful -> promote"}
    assert replica_row(["p0", "p1"], {"p0": rank0, "p1": _row("promoted")}) == rank0
    failed = replica_row(["p0", "p1"], {"p0": rank0, "p1": _row("failed", "its engine died")})
    assert (failed["outcome"], failed["message"], failed["verdict"]) == ("failed", "node p1: its engine died",
                                                                         "Successful -> promote")
    gone = replica_row(["p0", "p1"], {"p0": rank0, "p1": None})
    assert gone["outcome"] == "unreachable"
    assert gone["message"].startswith("node p1 became unreachable")
    assert replica_row(["p0", "p1"], {"p0": _row("rolled back", "gate"), "p1": _row("rolled back", "gate")}) == (
        _row("rolled back", "gate"))
    assert replica_row(["p0", "p1"], {}) is None


def published(rows: dict) -> dict:
    return {host: {"specgate_rollout_row": row} for host, row in rows.items()}


def test_a_batch_ends_on_its_replicas_a_failed_group_named_with_its_nodes() -> None:
    rollout = a_plan(["p0", "p1", "a"], [PAIR, *single("a")], [1])
    end = batch_end(rollout, published({"p0": _row("rolled back", "acceptance 1.0"), "p1": _row("rolled back")}),
                    "p1")
    assert (end["number"], end["stop"], end["failed"]) == (1, True, ["pair (p0, p1)"])
    assert "pair (p0, p1) rolled back: acceptance 1.0" in end["message"]
    assert (end["not_started"], end["next_batch"], end["promoted"]) == (["a"], ["a"], [])


def test_the_report_has_one_row_per_replica_with_its_nodes_and_marks_unreached_and_unreachable() -> None:
    rollout = a_plan(["p0", "p1", "a", "b", "c"], [PAIR, *single("a", "b", "c")], [1, 2])
    shown = report(rollout, published({"p0": _row("promoted"), "p1": _row("promoted"), "a": _row("rolled back")}),
                   2, "stopped")
    assert [(r["replica"], r["nodes"], r["host"], r["batch"], r["outcome"]) for r in shown["json"]["replicas"]] == [
        ("pair", ["p0", "p1"], "p0", 1, "promoted"), ("a", ["a"], "a", 2, "rolled back"),
        ("b", ["b"], "b", 2, "unreachable"), ("c", ["c"], "c", 3, "not started"),
    ]
    assert "| 1 | pair (p0, p1) | promoted |" in shown["markdown"]
    assert "| 3 | c | not started |" in shown["markdown"]


def test_report_markdown_has_one_line_per_replica_with_releases_and_numbers() -> None:
    rows = [
        {"replica": "a", "nodes": ["a"], "batch": 1, "outcome": "promoted", "previous_release": "old-1",
         "candidate": "new-1",
         "serving": "new-1", "verdict": "Successful -> promote",
         "metrics": [{"name": "accept_length", "success_condition": ">= 3", "mean": 5.04}],
         "router": {"removed": True, "in_flight_at_leave": "6", "drain_waited_on": 4, "drained_s": "2.25"}},
        {"replica": "b", "nodes": ["b"], "batch": 2, "outcome": "not started"},
    ]
    text = report_markdown({"id": "r1", "serial": [1, "100%"], "max_fail_percentage": 0, "router": "lb",
                            "stopped": "Rollout stopped: a | b"}, rows)
    assert "# Fleet rollout r1" in text
    assert ("| 1 | a | promoted | old-1 | new-1 | new-1 | Successful -> promote | accept_length 5.04 (>= 3) "
            "| 6 in flight, drained in 2.2 s (4 still running) |") in text
    assert "| 2 | b | not started |" in text
    assert "router: lb" in text
    assert "**Stopped:** Rollout stopped: a | b" in text
    assert "1 not started, 1 promoted" in text
