"""GPU memory release wait: nvidia-smi parsing and the bounded poll of the restart protocol."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.service.gpu_release import (
    GpuQueryError,
    parse_compute_apps,
    query_nvidia_smi,
    wait_for_gpu_release,
)
from fake_clock import FakeClock

pytestmark = pytest.mark.host


def test_parse_sums_a_pid_seen_on_several_gpus():
    text = "4242, 80000\n4242, 79000\n777, 512\n"
    assert parse_compute_apps(text) == {4242: 159000, 777: 512}


def test_parse_keeps_pid_with_unknown_memory_as_held():
    assert parse_compute_apps("31, [N/A]\n") == {31: None}


def test_parse_treats_empty_and_no_running_as_nothing_held():
    assert parse_compute_apps("") == {}
    assert parse_compute_apps("No running processes found\n") == {}


def test_parse_rejects_output_that_is_not_the_csv_query():
    with pytest.raises(GpuQueryError, match="unexpected nvidia-smi"):
        parse_compute_apps("Failed to initialize NVML: Driver/library version mismatch\n")


def test_wait_returns_at_the_first_poll_that_shows_the_pids_gone():
    clock = FakeClock()
    answers = iter(["100, 5000\n200, 10\n", "100, 5000\n200, 10\n", "200, 10\n"])
    result = wait_for_gpu_release(
        [100], query=lambda: next(answers), timeout=60, interval=0.5, clock=clock, sleep=clock.sleep
    )
    assert result.released
    assert result.polls == 3
    assert clock.now == pytest.approx(1.0)


def test_wait_ignores_other_processes_on_the_gpus():
    clock = FakeClock()
    result = wait_for_gpu_release([100], query=lambda: "999, 70000\n", timeout=5, clock=clock, sleep=clock.sleep)
    assert result.released
    assert result.polls == 1


def test_wait_times_out_and_names_the_pid_still_holding_memory():
    clock = FakeClock()
    result = wait_for_gpu_release(
        [100, 101], query=lambda: "100, 4096\n", timeout=3, interval=0.5, clock=clock, sleep=clock.sleep
    )
    assert not result.released
    assert result.still_held == {100: 4096}
    assert clock.now == pytest.approx(3.0)
    assert result.as_dict()["still_held"] == {"100": 4096}


def test_query_reports_a_missing_binary_as_a_query_error():
    with pytest.raises(GpuQueryError, match="failed"):
        query_nvidia_smi(["/nonexistent/nvidia-smi"])


def test_query_reports_a_failing_binary_with_its_message(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    smi.chmod(0o755)
    with pytest.raises(GpuQueryError, match="exited 9: NVIDIA-SMI has failed"):
        query_nvidia_smi([str(smi)])
