"""A command's log followed line by line (specgate_follow_job's log_file): debootstrap and podman import print their
own progress, and the follow shows the last complete line."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.progress import last_log_line

pytestmark = pytest.mark.host


def test_the_last_complete_line_is_shown_and_a_line_being_written_waits_for_the_next_round():
    log = b"I: Retrieving InRelease\nI: Checking Release signature\nI: Retrieving libc6 2.36\n\nI: Validat"
    assert last_log_line(log) == "I: Retrieving libc6 2.36"


def test_carriage_return_progress_shows_its_latest_state():
    log = b"Copying blob 1f2e done\rCopying blob 3a4b 12.0MiB / 80.0MiB\rCopying blob 3a4b 40.0MiB / 80.0MiB\r\n"
    assert last_log_line(log) == "Copying blob 3a4b 40.0MiB / 80.0MiB"


def test_only_the_tail_of_a_long_log_is_read():
    log = b"".join(b"I: Unpacking package-%05d\n" % n for n in range(20000))
    assert last_log_line(log) == "I: Unpacking package-19999"


@pytest.mark.parametrize("content", [None, b"", b"no newline yet"], ids=["no file", "empty", "no complete line"])
def test_nothing_to_show_before_the_first_complete_line(content):
    assert last_log_line(content) is None
