"""The sweep's progress line: point i of N, elapsed, ETA from the measured launches."""

from __future__ import annotations

from ansible.module_utils.specgate.sweep.progress import progress_line


def test_no_eta_before_a_launch_was_measured():
    assert progress_line(1, 18, "bs8-b4-t4", 3.0, []) == (
        "sweep point 1 of 18: bs8-b4-t4; elapsed 3s; ETA after the first launch"
    )


def test_the_eta_is_the_median_launch_times_the_points_left():
    line = progress_line(3, 18, "bs8-b8-t4", 1300.0, [600.0, 480.0, 10_000.0])
    assert "point 3 of 18" in line
    assert "elapsed 21m 40s" in line
    assert "ETA 2h 40m" in line  # median 600 s x 16 points left


def test_search_mode_says_the_total_and_eta_are_ceilings():
    line = progress_line(2, 18, "bs8-b4-t4", 600.0, [600.0], search=True)
    assert "of at most 18" in line
    assert "ETA at most 2h 50m" in line
