"""The rollout policy (one place for how a fleet is rolled), the batch's end read from the hosts' published rows,
the report, and a person's approval between batches."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.specgate.fleet.approval import APPROVED, STOPPED, TIMED_OUT, instructions, wait_for_approval
from ansible.module_utils.specgate.fleet.rollout import RolloutPolicy, batch_end, plan, report

pytestmark = pytest.mark.host


def test_the_policy_reads_its_settings_as_typed_or_as_command_line_text():
    policy = RolloutPolicy.from_settings({
        "fleet_rollout_serial": [1, "50%"], "fleet_rollout_max_fail_percentage": "20",
        "fleet_rollout_pause_between_batches": "yes", "fleet_rollout_pause_timeout": 600,
        "fleet_rollout_router": "lb", "fleet_rollout_reports_dir": "/r"})  # fmt: skip
    assert policy == RolloutPolicy(serial=[1, "50%"], max_fail_percentage=20, pause_between_batches=True,
                                   pause_timeout=600)  # fmt: skip
    assert policy.refusal() == ""
    assert RolloutPolicy.from_fact(policy.as_fact()) == policy
    assert RolloutPolicy.from_settings({}) == RolloutPolicy()


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"fleet_rollout_max_fail_percentage": "ten"}, "fleet_rollout_max_fail_percentage: 'ten' is not a whole"),
        ({"fleet_rollout_max_fail_percentage": 101}, "fleet_rollout_max_fail_percentage: 101 is not a percentage"),
        ({"fleet_rollout_serial": [0]}, "fleet_rollout_serial: [0] is not a batch plan"),
        ({"fleet_rollout_bake_seconds": 10}, "fleet_rollout_bake_seconds: 10 with fleet_rollout_bake_interval 5"),
        ({"fleet_rollout_bake_seconds": -1}, "fleet_rollout_bake_seconds: -1"),
        ({"fleet_rollout_pause_between_batches": "maybe"}, "fleet_rollout_pause_between_batches: 'maybe' is not"),
        ({"fleet_rollout_pause_between_batches": True, "fleet_rollout_pause_timeout": 0},
         "fleet_rollout_pause_timeout: 0 leaves a person no time"),
    ],
)
def test_a_policy_that_cannot_run_is_refused_naming_the_variable(settings, named):
    assert named in RolloutPolicy.from_settings(settings).refusal()


def test_every_problem_is_named_at_once():
    refusal = RolloutPolicy.from_settings({"fleet_rollout_serial": ["x"], "fleet_rollout_bake_seconds": "y"}).refusal()
    assert "fleet_rollout_serial" in refusal
    assert "fleet_rollout_bake_seconds" in refusal


ROLLOUT = plan(RolloutPolicy(serial=[1, "100%"], pause_between_batches=True), ["a", "b", "c"],
               [{"name": name, "nodes": [name]} for name in "abc"], rollout_id="20261205T060000Z", router="lb",
               reports_dir="/r/fleet/")


def test_the_plan_carries_the_policy_its_batches_and_the_reports_directory():
    assert ROLLOUT["batches"] == [["a"], ["b", "c"]]
    assert ROLLOUT["reports_dir"] == "/r/fleet/20261205T060000Z"
    assert ROLLOUT["pause_between_batches"] is True
    assert ROLLOUT["max_fail_percentage"] == 0


def _row(outcome: str, message: str = "") -> dict:
    return {"specgate_rollout_row": {"outcome": outcome, "message": message}}


def test_the_canarys_end_asks_for_approval_of_the_next_batch():
    end = batch_end(ROLLOUT, {"a": _row("promoted"), "b": {}, "c": {}}, "a")
    assert end["stop"] is False
    assert (end["number"], end["batch_count"], end["next_batch"]) == (1, 2, ["b", "c"])
    assert end["waits_for_approval"] is True
    assert end["promoted"] == ["a"]
    assert end["not_started"] == ["b", "c"]


def test_a_host_of_the_batch_that_published_no_row_fails_it_and_nothing_is_asked():
    end = batch_end(ROLLOUT, {"b": _row("promoted")}, "b")  # c unreachable: no hostvars row at all
    assert end["number"] == 2
    assert end["stop"] is True
    assert end["failed"] == ["c"]
    assert "c unreachable" in end["message"]
    assert end["waits_for_approval"] is False  # the last batch, and a stopped one


def test_the_report_has_every_replica_and_says_why_it_stopped():
    written = report(ROLLOUT, {"a": _row("promoted")}, 1, stopped="Rollout stopped before batch 2: stop written.")
    assert [(r["host"], r["batch"], r["outcome"]) for r in written["json"]["replicas"]] == [
        ("a", 1, "promoted"), ("b", 2, "not started"), ("c", 2, "not started")]
    assert written["json"]["rollout"]["stopped"].startswith("Rollout stopped before batch 2")
    assert "**Stopped:** Rollout stopped before batch 2" in written["markdown"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _wait(tmp_path: Path, batch: int, timeout: float, write_at: dict[float, str]):
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        for when, name in list(write_at.items()):
            if clock.now >= when:
                (tmp_path / name).write_text("")
                del write_at[when]

    return wait_for_approval(str(tmp_path), batch, timeout, 1.0, clock=clock, sleep=sleep)


def test_the_approval_of_this_batch_starts_it(tmp_path):
    decision = _wait(tmp_path, 2, 60, {5: "approve-batch-2"})
    assert decision.decision == APPROVED
    assert decision.waited_s == 5


def test_the_wait_says_it_waits_while_it_does_and_not_after(tmp_path):
    seen = []
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        seen.append((tmp_path / "waiting-batch-2").exists())
        clock.sleep(seconds)
        if clock.now >= 3:
            (tmp_path / "stop").write_text("")

    decision = wait_for_approval(str(tmp_path), 2, 60, 1.0, clock=clock, sleep=sleep)
    assert decision.decision == STOPPED
    assert seen == [True, True, True]
    assert not (tmp_path / "waiting-batch-2").exists()


def test_an_approval_of_another_batch_does_not_start_this_one(tmp_path):
    decision = _wait(tmp_path, 3, 10, {1: "approve-batch-2"})
    assert decision.decision == TIMED_OUT
    assert "nobody approved it within 10 s (fleet_rollout_pause_timeout" in decision.message


def test_a_stop_wins_over_an_approval(tmp_path):
    (tmp_path / "approve-batch-2").write_text("")
    (tmp_path / "stop").write_text("")
    decision = _wait(tmp_path, 2, 60, {})
    assert decision.decision == STOPPED
    assert decision.message.startswith("Rollout stopped before batch 2")


def test_the_person_is_told_which_hosts_and_how_to_answer():
    text = instructions("/r/x", 2, ["b", "c"], 600)
    assert "Waiting up to 600 s for a person to approve batch 2 (b, c)" in text
    assert "touch /r/x/approve-batch-2 to start it" in text
    assert "touch /r/x/stop to stop here" in text
