"""Engine load progress lines and the per-release load times they compare with."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.service import load_progress
from ansible.module_utils.specgate.service.load_progress import load_report, read_load_times, record_load_time

pytestmark = pytest.mark.host


def test_a_first_load_says_so_and_later_ones_compare_with_the_last():
    assert load_report(release="r1", elapsed=42, last=None)["line"] == (
        "engine: loading r1, 42s (first load of this release on this host)")
    assert load_report(release="r1", elapsed=130, last=365)["line"] == (
        "engine: loading r1, 2m 10s of about 6m 05s (its last load here)")
    assert load_report(release="r1", elapsed=400, last=365)["line"] == (
        "engine: loading r1, 6m 40s, longer than its last load here (6m 05s)")


def test_load_times_are_kept_per_release_and_the_latest_wins(tmp_path):
    path = str(tmp_path / "sub" / "load-times.json")
    assert read_load_times(path) == {}
    record_load_time(path, "r1", 300.04)
    record_load_time(path, "r2", 200)
    record_load_time(path, "r1", 310)
    assert read_load_times(path) == {"r2": 200.0, "r1": 310.0}
    assert list(json.loads((tmp_path / "sub" / "load-times.json").read_text())) == ["r2", "r1"]


def test_only_the_most_recent_releases_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(load_progress, "KEPT_RELEASES", 2)
    path = str(tmp_path / "load-times.json")
    for release in ("a", "b", "c"):
        record_load_time(path, release, 1)
    assert list(read_load_times(path)) == ["b", "c"]


def test_a_damaged_history_is_no_history(tmp_path):
    path = tmp_path / "load-times.json"
    path.write_text("{not json")
    assert read_load_times(str(path)) == {}
    path.write_text('["a list"]')
    assert read_load_times(str(path)) == {}
