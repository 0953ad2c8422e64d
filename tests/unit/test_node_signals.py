"""How the nodes of one restart meet on the controller: whole files only, rank 0's outcome for the followers, the
first failed follower for rank 0, and one directory per group and restart."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.service.node_signals import (
    FAILED,
    READY,
    Signal,
    failed_follower,
    leader_outcome,
    read_signals,
    signal_dir,
    write_signal,
)

pytestmark = pytest.mark.host


def test_a_restart_has_its_own_directory_per_group_and_restart(tmp_path):
    first = signal_dir(str(tmp_path), "kimi_h100_pair", "j1.2")
    assert first != signal_dir(str(tmp_path), "kimi_h100_pair", "j1.3")
    assert first != signal_dir(str(tmp_path), "other_pair", "j1.2")
    assert signal_dir(str(tmp_path), "a/../b", "x y").parent == tmp_path  # nothing escapes the base


def test_nothing_is_signalled_before_any_node_wrote(tmp_path):
    directory = signal_dir(str(tmp_path), "pair", "j1")
    assert read_signals(directory) == []
    assert leader_outcome(read_signals(directory)) is None
    assert failed_follower(read_signals(directory)) is None


def test_a_follower_failure_ends_rank_0_and_names_the_lowest_failed_rank(tmp_path):
    directory = signal_dir(str(tmp_path), "pair", "j1")
    write_signal(directory, Signal("node-c", 2, FAILED, "exited"))
    write_signal(directory, Signal("node-b", 1, FAILED, "the engine exited and systemd restarted it"))
    assert failed_follower(read_signals(directory)) == Signal("node-b", 1, FAILED,
                                                              "the engine exited and systemd restarted it")
    assert leader_outcome(read_signals(directory)) is None


def test_rank_0_outcome_ends_the_followers_and_a_ready_follower_is_no_failure(tmp_path):
    directory = signal_dir(str(tmp_path), "pair", "j1")
    write_signal(directory, Signal("node-b", 1, READY))
    write_signal(directory, Signal("node-a", 0, READY))
    assert failed_follower(read_signals(directory)) is None
    assert leader_outcome(read_signals(directory)) == Signal("node-a", 0, READY, "")


def test_a_half_written_or_foreign_file_is_skipped(tmp_path):
    directory = signal_dir(str(tmp_path), "pair", "j1")
    directory.mkdir(parents=True)
    (directory / "rank1.json").write_text('{"host": "node-b", "ra')
    (directory / "rank2.json").write_text('["not", "a", "signal"]')
    assert read_signals(directory) == []
    assert not list(directory.glob(".staging-*"))
