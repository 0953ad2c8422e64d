"""A fleet rollout's plan and verdicts: Ansible's own batches for serial, the go/no-go at the end of a batch (a
failure budget that must be exceeded, unreachable hosts counted), and the report's rows and table."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.fleet.rollout import (
    batch_verdict,
    batches,
    hosts_after,
    hosts_through,
    report_markdown,
    report_rows,
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


def test_through_and_after_split_the_plan() -> None:
    plan = [["a"], ["b", "c"], ["d"]]
    assert hosts_through(plan, 2) == ["a", "b", "c"]
    assert hosts_after(plan, 2) == ["d"]
    assert hosts_after(plan, 3) == []


def test_report_rows_mark_unreached_and_unreachable_hosts() -> None:
    rows = report_rows(["a", "b", "c", "d"], [1, 2], {"a": _row("promoted"), "b": _row("rolled back", "why")},
                       reached=["a", "b", "c"])
    assert [(r["host"], r["batch"], r["outcome"]) for r in rows] == [
        ("a", 1, "promoted"), ("b", 2, "rolled back"), ("c", 2, "unreachable"), ("d", 3, "not started"),
    ]


def test_report_markdown_has_one_line_per_host_with_releases_and_numbers() -> None:
    rows = [
        {"host": "a", "batch": 1, "outcome": "promoted", "previous_release": "old-1", "candidate": "new-1",
         "serving": "new-1", "verdict": "Successful -> promote",
         "metrics": [{"name": "accept_length", "success_condition": ">= 3", "mean": 5.04}],
         "router": {"removed": True, "in_flight_at_leave": "6", "drain_waited_on": 4, "drained_s": "2.25"}},
        {"host": "b", "batch": 2, "outcome": "not started"},
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
