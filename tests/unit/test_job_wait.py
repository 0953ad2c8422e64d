"""One round of a follow (specgate_job_wait): the host watches the async job's file and returns the moment
ansible.builtin.async_status would call the job finished, or when the round is over; the progress line comes
from the report or from the tail of a log. The files are the ones Ansible's async_wrapper writes."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.common.job_wait import job_ended, read_tail, wait_for_job
from ansible.module_utils.specgate.common.progress import progress_line
from fake_clock import FakeClock

pytestmark = pytest.mark.host

# What ansible/modules/async_wrapper.py writes when the job starts (jwrite), and a module's result that replaces it.
STARTED = {"started": True, "finished": False, "ansible_job_id": "j1"}
RESULT = {"changed": False, "rc": 0, "msg": "done"}


@pytest.mark.parametrize(
    ("content", "ended"),
    [
        (json.dumps(STARTED), False),
        ("", False),  # created, not written yet
        ('{"changed": fal', False),  # caught mid-write
        (json.dumps(RESULT), True),
        (json.dumps({**STARTED, "finished": 1}), True),
        (json.dumps({"failed": True, "msg": "boom"}), True),
    ],
    ids=["started", "empty", "mid-write", "result", "finished", "failed"],
)
def test_the_job_counts_as_ended_exactly_when_async_status_would_say_finished(tmp_path, content, ended):
    job = tmp_path / "j1"
    job.write_text(content)
    assert job_ended(str(job)) is ended


def test_a_missing_job_file_ends_the_wait_so_async_status_reports_it(tmp_path):
    assert job_ended(str(tmp_path / "gone")) is True


def test_the_wait_returns_at_the_first_look_after_the_job_ends_not_at_the_round_s_end(tmp_path):
    job = tmp_path / "j1"
    job.write_text(json.dumps(STARTED))
    clock = FakeClock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now >= 1.0:
            job.write_text(json.dumps(RESULT))

    assert wait_for_job(str(job), 30.0, tick_s=0.2, clock=clock, sleep=sleep) is True
    assert clock.now == pytest.approx(1.0)


def test_a_job_still_running_returns_when_the_round_is_over(tmp_path):
    job = tmp_path / "j1"
    job.write_text(json.dumps(STARTED))
    clock = FakeClock()
    assert wait_for_job(str(job), 1.0, tick_s=0.3, clock=clock, sleep=clock.sleep) is False
    assert clock.now == pytest.approx(1.0)
    assert clock.sleeps[-1] == pytest.approx(0.1)  # the last look is at the round's end, not a tick past it


def test_a_round_of_zero_looks_once(tmp_path):
    job = tmp_path / "j1"
    job.write_text(json.dumps(STARTED))
    clock = FakeClock()
    assert wait_for_job(str(job), 0.0, clock=clock, sleep=clock.sleep) is False
    assert clock.sleeps == []


def test_only_the_tail_of_a_log_is_read_and_a_missing_file_reads_as_none(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"x" * 10_000 + b"\nlast line\n")
    assert read_tail(str(log), 11) == b"\nlast line\n"
    assert read_tail(str(tmp_path / "absent"), 12) is None


@pytest.mark.parametrize(
    ("content", "line"),
    [(json.dumps({"line": "bench: cell 3 of 4"}).encode(), "bench: cell 3 of 4"), (None, None), (b'{"li', None),
     (b'{"other": 1}', None)],
    ids=["report", "no file yet", "mid-write", "another shape"],
)
def test_the_progress_report_s_line_or_none_until_there_is_one(content, line):
    assert progress_line(content) == line
