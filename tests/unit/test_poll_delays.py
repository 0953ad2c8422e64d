"""The waits between a follow's polls (specgate_follow_job, sglang_service_follow_nodes): a short job is seen ending
within about a second, a long one is polled no more often than its interval says."""

from __future__ import annotations

import itertools

import pytest
from ansible.module_utils.specgate.common.progress import poll_delays

pytestmark = pytest.mark.host


def test_the_waits_double_from_half_a_second_up_to_the_interval_and_stay_there():
    assert list(itertools.islice(poll_delays(10), 8)) == [0.5, 1, 2, 4, 8, 10, 10, 10]


@pytest.mark.parametrize("job_s", [0.3, 1.0, 2.5, 7.0])
def test_a_job_shorter_than_the_interval_is_seen_ending_well_before_one_interval(job_s):
    waited = 0.0
    for delay in poll_delays(10):
        if waited >= job_s:
            break
        waited += delay
    assert waited < 10
    assert waited <= 2 * job_s + 0.5  # at most one doubling late


def test_a_long_job_adds_only_the_first_doublings_to_the_polls_the_interval_gives():
    polls = 0
    waited = 0.0
    for delay in poll_delays(15):
        if waited >= 3600:
            break
        waited += delay
        polls += 1
    assert polls <= 3600 / 15 + 5


def test_an_interval_below_the_first_wait_is_kept():
    assert list(itertools.islice(poll_delays(0.25), 3)) == [0.25, 0.25, 0.25]
