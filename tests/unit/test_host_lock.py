"""The host's change lock: one holder, renewal by its own token, a dead run's lock taken over, waiting bounded."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from ansible.module_utils.specgate.service.host_lock import (
    acquire,
    describe,
    read_record,
    release,
    stale_reason,
    timeout_message,
    try_acquire,
    waiting_line,
)
from fake_clock import FakeClock

pytestmark = pytest.mark.host

ALICE = {"token": "tok-alice", "controller": "ctl01", "user": "alice", "pid": 4242, "playbook": "deploy.yml"}
BOB = {"token": "tok-bob", "controller": "ctl02", "user": "bob", "pid": 777, "playbook": "deploy.yml"}


def test_a_free_lock_is_taken_and_records_its_holder(tmp_path):
    path = str(tmp_path / "run" / "sglang.lock")
    result = acquire(path, ALICE, lease_s=600, timeout_s=0, poll_s=1)
    assert result.acquired
    assert not result.renewed
    assert result.replaced is None
    record = read_record(path)
    assert record["user"] == "alice"
    assert record["pid"] == 4242
    assert record["lease_s"] == 600
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"


def test_the_holders_own_token_renews_the_lease_and_keeps_since(tmp_path):
    path = str(tmp_path / "sglang.lock")
    first = try_acquire(path, ALICE, 600, now=100.0)
    again = try_acquire(path, ALICE, 600, now=400.0)
    assert again.acquired
    assert again.renewed
    assert again.record["since_epoch"] == first.record["since_epoch"] == 100.0
    assert again.record["renewed_epoch"] == 400.0


def test_a_live_holder_makes_another_run_wait_then_fail_naming_it(tmp_path):
    path = str(tmp_path / "sglang.lock")
    clock = FakeClock(start=1_000_000.0)
    try_acquire(path, ALICE, 3600, now=clock.now - 120)
    result = acquire(path, BOB, lease_s=3600, timeout_s=30, poll_s=5, clock=clock, sleep=clock.sleep)
    assert not result.acquired
    assert result.waited_s == 30
    assert sum(clock.sleeps) == 30
    assert read_record(path)["token"] == "tok-alice"
    message = timeout_message(result.record, path, result.waited_s, clock.now)
    assert "alice@ctl01" in message
    assert "PID 4242" in message
    assert "150 s ago" in message
    assert "sglang_service_lock_timeout" in message
    assert "playbooks/unlock.yml" in message


def test_a_waiting_run_takes_the_lock_as_soon_as_the_holder_releases_it(tmp_path):
    path = str(tmp_path / "sglang.lock")
    clock = FakeClock(start=1_000_000.0)
    try_acquire(path, ALICE, 3600, now=clock.now)

    def sleep_then_holder_releases(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.sleeps) == 3:
            assert release(path, "tok-alice")[0] == "released"

    result = acquire(path, BOB, lease_s=3600, timeout_s=600, poll_s=5, clock=clock, sleep=sleep_then_holder_releases)
    assert result.acquired
    assert result.waited_s == 15
    assert read_record(path)["token"] == "tok-bob"


def test_a_waiting_run_is_told_at_each_poll_who_holds_the_lock_and_how_long_it_waited(tmp_path):
    """A second deploy once waited 75 s at the lock with no output: each poll now says who holds it and since when."""
    path = str(tmp_path / "sglang.lock")
    clock = FakeClock(start=1_000_000.0)
    try_acquire(path, ALICE, 3600, now=clock.now - 60)
    told: list[str] = []
    result = acquire(path, BOB, lease_s=3600, timeout_s=20, poll_s=5, clock=clock, sleep=clock.sleep,
                     on_wait=lambda record, waited, at: told.append(waiting_line(record, waited, at, 20)))
    assert not result.acquired
    assert len(told) == 5  # at 0, 5, 10, 15 and 20 s
    assert told[0].startswith("waiting for the change lock, held by alice@ctl01 (ansible-playbook PID 4242")
    assert "60 s ago" in told[0]
    assert told[-1].endswith("waited 20 s of 20 s (sglang_service_lock_timeout)")
    # A free lock: taken at once, nothing to say
    told.clear()
    assert acquire(str(tmp_path / "free.lock"), BOB, lease_s=60, timeout_s=20, poll_s=5,
                   on_wait=lambda *a: told.append("x")).acquired  # fmt: skip
    assert told == []


def test_a_lapsed_lease_is_a_dead_run_whose_lock_is_taken_over(tmp_path):
    path = str(tmp_path / "sglang.lock")
    try_acquire(path, ALICE, 60, now=1000.0)
    result = try_acquire(path, BOB, 60, now=1061.0)
    assert result.acquired
    assert result.replaced["token"] == "tok-alice"
    assert "lease lapsed" in result.replaced_because


def test_a_takeover_token_frees_a_dead_runs_lock_before_its_lease_lapses(tmp_path):
    path = str(tmp_path / "sglang.lock")
    try_acquire(path, ALICE, 3600, now=1000.0)
    assert not try_acquire(path, BOB, 3600, now=1010.0, takeover="tok-someone-else").acquired
    result = try_acquire(path, BOB, 3600, now=1010.0, takeover="tok-alice")
    assert result.acquired
    assert "no longer runs" in result.replaced_because


def test_an_unreadable_record_counts_as_dead(tmp_path):
    path = tmp_path / "sglang.lock"
    path.write_text("{torn")
    assert stale_reason(read_record(str(path)), now=1.0)
    assert try_acquire(str(path), BOB, 60, now=1.0).acquired


def test_release_drops_only_its_own_lock_unless_forced(tmp_path):
    path = str(tmp_path / "sglang.lock")
    try_acquire(path, ALICE, 60, now=1.0)
    assert release(path, "tok-bob")[0] == "held by another run"
    assert read_record(path)["token"] == "tok-alice"
    assert release(path, "tok-bob", force=True)[0] == "released"
    assert release(path, "tok-alice") == ("absent", None)


def test_describe_says_who_since_when_and_when_it_lapses():
    record = {**ALICE, "since_epoch": 0, "renewed_epoch": 60, "lease_s": 60}
    text = describe(record, now=90)
    assert "alice@ctl01" in text
    assert "1970-01-01T00:00:00Z" in text
    assert "90 s ago" in text
    assert "1970-01-01T00:02:00Z" in text


def _contend(path: str, token: str, queue) -> None:
    result = acquire(path, {"token": token}, lease_s=3600, timeout_s=0, poll_s=0.01)
    queue.put((token, result.acquired))


def test_runs_that_race_for_a_free_lock_leave_exactly_one_holder(tmp_path):
    path = str(tmp_path / "sglang.lock")
    queue = multiprocessing.get_context("fork").Queue()
    procs = [
        multiprocessing.get_context("fork").Process(target=_contend, args=(path, f"tok-{n}", queue)) for n in range(8)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(10)
    outcomes = dict(queue.get(timeout=5) for _ in procs)
    winners = [token for token, acquired in outcomes.items() if acquired]
    assert len(winners) == 1, outcomes
    assert json.loads(Path(path).read_text(encoding="utf-8"))["token"] == winners[0]
