"""Manifest contents, content checks and progress lines."""

from __future__ import annotations

import hashlib
import json

import pytest
from ansible.module_utils.specgate.common.progress import ProgressWriter, format_duration
from ansible.module_utils.specgate.weights.weights_manifest import (
    build_manifest,
    content_mismatch,
    git_blob_id_of,
    manifest_differs,
    read_manifest,
    verified_hashes,
    write_manifest,
)
from ansible.module_utils.specgate.weights.weights_plan import RemoteFile
from ansible.module_utils.specgate.weights.weights_progress import bytes_on_disk, progress_report

pytestmark = pytest.mark.host


def test_content_mismatch_uses_sha256_for_lfs_and_git_blob_ids_otherwise(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"weights")
    (tmp_path / "c.json").write_bytes(b"{}")
    good_lfs = RemoteFile("w.bin", 7, sha256=hashlib.sha256(b"weights").hexdigest())
    assert content_mismatch(str(tmp_path), good_lfs) is None
    assert "sha256" in content_mismatch(str(tmp_path), RemoteFile("w.bin", 7, sha256="0" * 64))
    # git hash-object of "{}" — the id the hub publishes for a 2-byte JSON file
    assert git_blob_id_of(str(tmp_path / "c.json")) == "9e26dfeeb6e641a33dae4961196235bdb965b21b"
    assert "git blob" in content_mismatch(str(tmp_path), RemoteFile("c.json", 2, blob_id="1" * 40))


def test_manifest_round_trip_and_only_the_timestamp_is_ignored(tmp_path):
    files = [RemoteFile("b", 2, sha256="x" * 64), RemoteFile("a", 1)]
    manifest = build_manifest(repo_id="o/n", revision="main", commit="c" * 40, source="hub", files=files,
                              verified={"b"}, allow_patterns=None, ignore_patterns=["*.pth"])
    assert manifest["files"] == [{"path": "a", "size": 1}, {"path": "b", "size": 2, "sha256": "x" * 64}]
    write_manifest(str(tmp_path), manifest, "2026-01-01T00:00:00+00:00")
    on_disk = read_manifest(str(tmp_path))
    assert on_disk["written_at"] == "2026-01-01T00:00:00+00:00"
    assert not manifest_differs(on_disk, manifest)
    assert manifest_differs(on_disk, {**manifest, "commit": "d" * 40})
    assert manifest_differs(None, manifest)
    assert verified_hashes(on_disk, files) == {"b"}
    assert verified_hashes(on_disk, [RemoteFile("b", 2, sha256="y" * 64)]) == set()


def test_unreadable_manifest_counts_as_none(tmp_path):
    (tmp_path / ".specgate-manifest.json").write_text("{not json")
    assert read_manifest(str(tmp_path)) is None


def test_progress_line_has_bytes_rate_and_eta():
    report = progress_report(done=3 * 10**9, total=5 * 10**9, baseline=1 * 10**9, elapsed=10.0, label="weights")
    assert report["rate_bytes_per_s"] == 2 * 10**8
    assert report["eta_s"] == 10.0
    assert report["line"] == "weights: 3.00 / 5.00 GB (60%), 200.0 MB/s, ETA 10s"
    assert progress_report(done=5, total=5, baseline=5, elapsed=1, label="w")["line"].endswith("ETA done")
    small = progress_report(done=250_000, total=1_000_000, baseline=0, elapsed=1.0, label="w")
    assert small["line"] == "w: 0.25 / 1.00 MB (25%), 0.2 MB/s, ETA 3s"
    assert format_duration(3725) == "1h 02m"
    assert format_duration(125) == "2m 05s"


def test_bytes_on_disk_counts_finished_files_and_in_flight_temp_files(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 10)
    download = tmp_path / ".cache" / "huggingface" / "download"
    download.mkdir(parents=True)
    (download / "b.0123abcd.incomplete").write_bytes(b"y" * 4)
    assert bytes_on_disk(str(tmp_path), [RemoteFile("a", 10), RemoteFile("b", 8)]) == 14


def test_progress_writer_leaves_a_final_report(tmp_path):
    target = tmp_path / "progress.json"
    calls = []

    def measure():
        calls.append(1)
        return {"line": f"call {len(calls)}"}

    writer = ProgressWriter(str(target), measure, interval=0.05)
    writer.start()
    writer.stop()
    report = json.loads(target.read_text())
    assert report["final"] is True
    assert len(calls) >= 2
