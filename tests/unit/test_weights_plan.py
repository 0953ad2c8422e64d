"""Planning a weights download: what is missing, and whether target and drafter fit together."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.weights.weights_plan import (
    GB,
    FsInfo,
    RemoteFile,
    disk_failures,
    disk_needs,
    exact_pattern,
    existing_ancestor,
    fs_info,
    gb,
    plan_snapshot,
    select_files,
)
from huggingface_hub.utils import filter_repo_objects

pytestmark = pytest.mark.host

FILES = [
    RemoteFile("config.json", 100),
    RemoteFile("model-00001-of-00002.safetensors", 5000),
    RemoteFile("model-00002-of-00002.safetensors", 7000),
    RemoteFile("original/consolidated.pth", 9000),
]


def _plan(name, sizes_on_disk, files=FILES, local_dir="/models/x"):
    return plan_snapshot(name=name, repo_id="o/n", revision="main", commit="c" * 40, local_dir=local_dir,
                         files=files, size_of=lambda _d, path: sizes_on_disk.get(path))


def test_only_files_present_at_their_exact_size_count_as_complete():
    plan = _plan("target", {"config.json": 100, "model-00001-of-00002.safetensors": 4999})
    assert [f.path for f in plan.missing] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "original/consolidated.pth"]
    assert plan.wrong_size == ["model-00001-of-00002.safetensors"]
    assert plan.needed_bytes == 21000
    assert plan.total_bytes == 21100
    assert not plan.complete


def test_a_complete_snapshot_needs_nothing():
    plan = _plan("target", {f.path: f.size for f in FILES})
    assert plan.complete
    assert plan.needed_bytes == 0


@pytest.mark.parametrize(
    ("allow", "ignore"),
    [(None, None), (["*.safetensors"], None), (None, ["original/"]), (["*.json", "original/*"], ["*.pth"])],
)
def test_pattern_selection_matches_huggingface_hub(allow, ignore):
    ours = [f.path for f in select_files(FILES, allow, ignore)]
    theirs = list(filter_repo_objects([f.path for f in FILES], allow_patterns=allow, ignore_patterns=ignore))
    assert ours == theirs


def test_exact_pattern_matches_only_its_own_path():
    tricky = ["a[1].bin", "a1.bin", "x*y.json", "xzy.json", "q?.txt", "qa.txt"]
    for path in tricky:
        assert list(filter_repo_objects(tricky, allow_patterns=[exact_pattern(path)])) == [path]


def test_disk_check_counts_target_and_drafter_together_on_a_shared_filesystem():
    target = _plan("target", {}, files=[RemoteFile("t.safetensors", int(541.8 * GB))], local_dir="/models/t")
    drafter = _plan("drafter", {}, files=[RemoteFile("d.safetensors", int(6.5 * GB))], local_dir="/models/d")
    shared = FsInfo(device=1, mount="/models", free_bytes=int(30.1 * GB))
    needs = disk_needs([target, drafter], headroom_bytes=0, fs_of=lambda _p: shared)
    assert len(needs) == 1
    assert disk_failures(needs) == [
        "need 548.3 GB more on /models (target 541.8 GB + drafter 6.5 GB), 30.1 GB free"]


def test_each_fits_alone_but_not_together_fails():
    target = _plan("target", {}, files=[RemoteFile("t", 20 * GB)], local_dir="/models/t")
    drafter = _plan("drafter", {}, files=[RemoteFile("d", 15 * GB)], local_dir="/models/d")
    shared = FsInfo(device=1, mount="/models", free_bytes=30 * GB)
    assert disk_failures(disk_needs([target], 0, lambda _p: shared)) == []
    assert disk_failures(disk_needs([drafter], 0, lambda _p: shared)) == []
    assert disk_failures(disk_needs([target, drafter], 0, lambda _p: shared))


def test_separate_filesystems_are_checked_separately():
    target = _plan("target", {}, files=[RemoteFile("t", 20 * GB)], local_dir="/models/t")
    drafter = _plan("drafter", {}, files=[RemoteFile("d", 15 * GB)], local_dir="/scratch/d")
    fs = {"/models/t": FsInfo(1, "/models", 25 * GB), "/scratch/d": FsInfo(2, "/scratch", 10 * GB)}
    needs = disk_needs([target, drafter], 0, fs.__getitem__)
    assert disk_failures(needs) == ["need 15.0 GB more on /scratch (drafter 15.0 GB), 10.0 GB free"]


def test_headroom_is_added_and_named_in_the_message():
    target = _plan("target", {}, files=[RemoteFile("t", 20 * GB)])
    fs = FsInfo(1, "/models", 25 * GB)
    failures = disk_failures(disk_needs([target], 10 * GB, lambda _p: fs))
    assert failures == ["need 30.0 GB more on /models (target 20.0 GB + headroom 10.0 GB), 25.0 GB free"]


def test_headroom_alone_never_fails_a_complete_snapshot():
    plan = _plan("target", {f.path: f.size for f in FILES})
    assert disk_failures(disk_needs([plan], 10**15, lambda _p: FsInfo(1, "/", 0))) == []


def test_free_space_is_measured_on_the_nearest_existing_parent(tmp_path):
    future = tmp_path / "models" / "target"
    assert existing_ancestor(str(future)) == tmp_path
    info = fs_info(str(future))
    assert info.device == tmp_path.stat().st_dev
    assert info.free_bytes > 0


def test_gb_is_decimal_with_one_decimal():
    assert gb(548_300_000_000) == "548.3 GB"
