"""hf_snapshot's logic against the local hub in sim/, through the real huggingface_hub client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from ansible.module_utils.specgate.weights import hf_fetch
from ansible.module_utils.specgate.weights.drafter_facts import check_dflash_drafter
from ansible.module_utils.specgate.weights.weights_plan import FsInfo, fs_info
from ansible.module_utils.specgate.weights.weights_snapshot import Options, SnapshotSpec, WeightsError, run
from specgate_sim import fixtures
from specgate_sim.hub_server import running_hub

TOKEN = "hf_specgate_weights_test"
SHARD = "model-00002-of-00004.safetensors"


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("hubroot")
    return root, fixtures.write_fixtures(root)


@pytest.fixture
def hub(hub_root):
    with running_hub(hub_root[0], [TOKEN]) as running:
        yield running


def _run(hub_url, specs, fs_of=fs_info, **options):
    return run(
        specs,
        Options(endpoint=hub_url, **options),
        listing=hf_fetch.remote_listing,
        fetch=hf_fetch.download,
        describe=hf_fetch.describe_error,
        forget=hf_fetch.forget_local_copy,
        now="2026-01-01T00:00:00+00:00",
        fs_of=fs_of,
        probe=hf_fetch.probe_access,
    )


def _specs(base: Path, target=fixtures.TARGET, drafter=fixtures.DRAFTER_B8, revision="main"):
    return [
        SnapshotSpec(name="drafter", repo_id=drafter, revision="main", local_dir=str(base / "drafter")),
        SnapshotSpec(name="target", repo_id=target, revision=revision, local_dir=str(base / "target")),
    ]


def _served_files(hub_root, repo, sha=None) -> dict[str, bytes]:
    directory = hub_root[0] / repo / (sha or hub_root[1][repo]["main"])
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def _local_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")}


def test_download_fetches_target_and_drafter_and_writes_manifests(hub_root, hub, tmp_path):
    result = _run(hub.url, _specs(tmp_path))
    assert result["changed"] is True
    assert _local_files(tmp_path / "target") == _served_files(hub_root, fixtures.TARGET)
    assert _local_files(tmp_path / "drafter") == _served_files(hub_root, fixtures.DRAFTER_B8)
    manifest = json.loads((tmp_path / "target" / ".specgate-manifest.json").read_text())
    assert manifest["repo_id"] == fixtures.TARGET
    assert manifest["commit"] == hub_root[1][fixtures.TARGET]["main"]
    assert {f["path"]: f["size"] for f in manifest["files"]} == {
        k: len(v) for k, v in _served_files(hub_root, fixtures.TARGET).items()}
    by_name = {s["name"]: s for s in result["snapshots"]}
    assert by_name["target"]["fetched_bytes"] == by_name["target"]["total_bytes"] > 0


def test_rerun_with_everything_present_is_unchanged_and_reads_metadata_only(hub, tmp_path):
    _run(hub.url, _specs(tmp_path))
    hub.state.requests.clear()
    result = _run(hub.url, _specs(tmp_path))
    assert result["changed"] is False
    assert [r["path"].split("/")[2] for r in hub.state.requests] == ["models", "models"]
    assert all("/resolve/" not in r["path"] for r in hub.state.requests)


def test_check_mode_reports_the_plan_and_writes_nothing(hub, tmp_path):
    result = _run(hub.url, _specs(tmp_path), check_mode=True)
    assert result["changed"] is True
    assert result["pending"] is True
    assert {s["name"]: s["needed_bytes"] > 0 for s in result["snapshots"]} == {"drafter": True, "target": True}
    assert not (tmp_path / "target").exists()
    assert hub.resolve_requests("GET") == []


def test_pinning_the_older_commit_gets_that_commit(hub_root, hub, tmp_path):
    older = hub_root[1][fixtures.TARGET]["commits"][0]
    result = _run(hub.url, _specs(tmp_path, revision=older))
    assert {s["name"]: s["commit"] for s in result["snapshots"]}["target"] == older
    assert _local_files(tmp_path / "target") == _served_files(hub_root, fixtures.TARGET, older)


def test_gated_repo_without_token_fails_naming_the_token_variable(hub, tmp_path):
    with pytest.raises(WeightsError) as error:
        _run(hub.url, _specs(tmp_path, target=fixtures.TARGET_GATED))
    assert "is gated" in str(error.value)
    assert "model_weights_hf_token" in str(error.value)
    assert not (tmp_path / "drafter").exists()


def test_gated_repo_with_a_wrong_token_is_rejected(hub, tmp_path):
    with pytest.raises(WeightsError, match=r"rejected the token \(HTTP 401\): check model_weights_hf_token"):
        _run(hub.url, _specs(tmp_path, target=fixtures.TARGET_GATED), token="hf_wrong")


def test_gated_repo_with_the_token_downloads(hub, tmp_path):
    result = _run(hub.url, _specs(tmp_path, target=fixtures.TARGET_GATED), token=TOKEN)
    assert result["changed"] is True
    assert (tmp_path / "target" / "config.json").is_file()


def test_unknown_repo_fails_naming_the_repo_variable(hub, tmp_path):
    with pytest.raises(WeightsError, match=r"repository specgate-fixtures/nope not found .*model_weights_target_repo"):
        _run(hub.url, _specs(tmp_path, target=f"{fixtures.ORG}/nope"))


def test_unknown_revision_fails_naming_the_revision_variable(hub, tmp_path):
    with pytest.raises(WeightsError, match=r"revision 'v9' not found .*model_weights_target_revision"):
        _run(hub.url, _specs(tmp_path, revision="v9"))


def test_disk_check_fails_before_any_download_when_both_do_not_fit(hub_root, hub, tmp_path):
    target_bytes = sum(len(v) for v in _served_files(hub_root, fixtures.TARGET).values())
    drafter_bytes = sum(len(v) for v in _served_files(hub_root, fixtures.DRAFTER_B8).values())
    free = target_bytes + drafter_bytes // 2
    shared = FsInfo(device=1, mount="/models", free_bytes=free)
    with pytest.raises(WeightsError) as error:
        _run(hub.url, _specs(tmp_path), fs_of=lambda _p: shared)
    assert "before downloading anything" in str(error.value)
    assert "(drafter 0.0 GB + target 0.0 GB)" in str(error.value)
    assert error.value.result["disk"][0]["parts"] == {"drafter": drafter_bytes, "target": target_bytes}
    assert hub.resolve_requests("GET") == []


def test_disk_check_counts_every_sweep_drafter_and_says_the_fix_before_any_download(hub_root, hub, tmp_path):
    """Issue 17: a sweep's points name their own drafters; the target and both drafters fit only all together or
    not at all, so the check sums them, refuses before any file is asked for and says what to change."""
    sizes = {repo: sum(len(v) for v in _served_files(hub_root, repo).values())
             for repo in (fixtures.TARGET, fixtures.DRAFTER_B8, fixtures.DRAFTER_B16)}  # fmt: skip
    specs = [*_specs(tmp_path)[:1],
             SnapshotSpec(name="drafter dflash-b16", repo_id=fixtures.DRAFTER_B16, revision="main",
                          local_dir=str(tmp_path / "drafter-b16")),
             *_specs(tmp_path)[1:]]  # fmt: skip
    fits_without_b16 = FsInfo(device=1, mount="/models", free_bytes=sum(sizes.values()) - 1)
    with pytest.raises(WeightsError) as error:
        _run(hub.url, specs, fs_of=lambda _p: fits_without_b16, disk_advice="Fix: model_weights_sweep_drafters.")
    assert "(drafter 0.0 GB + drafter dflash-b16 0.0 GB + target 0.0 GB)" in str(error.value)
    assert str(error.value).endswith(". Fix: model_weights_sweep_drafters.")
    assert error.value.result["disk"][0]["parts"] == {"drafter": sizes[fixtures.DRAFTER_B8],
                                                      "drafter dflash-b16": sizes[fixtures.DRAFTER_B16],
                                                      "target": sizes[fixtures.TARGET]}  # fmt: skip
    assert hub.resolve_requests("GET") == []
    enough = FsInfo(device=1, mount="/models", free_bytes=sum(sizes.values()))
    _run(hub.url, specs, fs_of=lambda _p: enough)
    assert (tmp_path / "drafter-b16" / "config.json").is_file()


def test_cut_download_fails_keeps_only_complete_files_and_a_rerun_finishes(hub_root, hub, tmp_path):
    httpx.post(f"{hub.url}/_admin/cut", json={"after_bytes": 50000, "path": SHARD}).raise_for_status()
    with pytest.raises(WeightsError, match=r"download interrupted.*re-run to resume"):
        _run(hub.url, _specs(tmp_path), max_workers=1)
    target = tmp_path / "target"
    served = _served_files(hub_root, fixtures.TARGET)
    assert not (target / SHARD).exists()
    assert not list(target.rglob("*.incomplete"))
    for name, data in _local_files(target).items():
        assert data == served[name], f"{name} kept with wrong content"
    kept = set(_local_files(target))
    httpx.delete(f"{hub.url}/_admin/cut").raise_for_status()
    hub.state.requests.clear()
    result = _run(hub.url, _specs(tmp_path))
    assert _local_files(target) == served
    fetched_again = {r["path"].rsplit("/", 1)[-1] for r in hub.resolve_requests("GET")}
    assert SHARD in fetched_again
    assert not (fetched_again & kept)
    assert result["changed"] is True


def test_a_local_file_of_the_wrong_size_is_fetched_again(hub_root, hub, tmp_path):
    _run(hub.url, _specs(tmp_path))
    shard = tmp_path / "target" / SHARD
    shard.write_bytes(shard.read_bytes()[:1000])
    hub.state.requests.clear()
    result = _run(hub.url, _specs(tmp_path))
    assert result["changed"] is True
    assert shard.read_bytes() == _served_files(hub_root, fixtures.TARGET)[SHARD]
    assert [r["path"].rsplit("/", 1)[-1] for r in hub.resolve_requests("GET")] == [SHARD]
    assert {s["name"]: s["wrong_size"] for s in result["snapshots"]}["target"] == [SHARD]


def test_sha256_check_removes_a_same_size_corrupt_file(hub_root, hub, tmp_path):
    _run(hub.url, _specs(tmp_path))
    shard = tmp_path / "target" / SHARD
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert _run(hub.url, _specs(tmp_path))["changed"] is False  # sizes only: not noticed, by design
    with pytest.raises(WeightsError, match=f"content check failed, removed {SHARD}: sha256"):
        _run(hub.url, _specs(tmp_path), verify_sha256=True)
    assert not shard.exists()
    _run(hub.url, _specs(tmp_path), verify_sha256=True)
    assert shard.read_bytes() == _served_files(hub_root, fixtures.TARGET)[SHARD]
    manifest = json.loads((tmp_path / "target" / ".specgate-manifest.json").read_text())
    assert all("sha256" in f for f in manifest["files"] if f["path"].endswith(".safetensors"))


def test_prestaged_directories_need_no_hub(hub_root, tmp_path):
    staged = tmp_path / "nfs" / "kimi"
    shutil.copytree(hub_root[1][fixtures.TARGET]["path"], staged)
    specs = [SnapshotSpec(name="target", local_dir="", local_path=str(staged))]
    result = _run("http://127.0.0.1:9", specs)
    assert result["changed"] is False
    assert result["snapshots"][0]["path"] == str(staged)
    assert result["snapshots"][0]["source"] == "local"
    assert not (staged / ".specgate-manifest.json").exists()


def test_prestaged_directory_missing_a_shard_fails(hub_root, tmp_path):
    staged = tmp_path / "kimi"
    shutil.copytree(hub_root[1][fixtures.TARGET]["path"], staged)
    (staged / SHARD).unlink()
    with pytest.raises(WeightsError, match=f"lacks shards its index names: {SHARD}"):
        _run("http://127.0.0.1:9", [SnapshotSpec(name="target", local_dir="", local_path=str(staged))])


@pytest.mark.parametrize(
    ("specs", "reason"),
    [
        ([SnapshotSpec(name="target", local_dir="/m", repo_id="", revision="x")], "model_weights_target_repo is empty"),
        ([SnapshotSpec(name="target", local_dir="/m/t", repo_id="a/b/c", revision="main")], "is not 'org/name'"),
        ([SnapshotSpec(name="target", local_dir="/m/t", repo_id="a/b")], "model_weights_target_revision is empty"),
        ([SnapshotSpec(name="target", local_dir="m/t", repo_id="a/b", revision="x")], "must be an absolute path"),
        ([SnapshotSpec(name="target", local_dir="/m", repo_id="a/b", revision="x", local_path="/p")], "not both"),
        ([SnapshotSpec(name="target", local_dir="/m", repo_id="a/b", revision="x"),
          SnapshotSpec(name="drafter", local_dir="/m/", repo_id="a/c", revision="x")], "same directory"),
    ],
)
def test_bad_input_fails_before_the_hub_is_asked(specs, reason):
    with pytest.raises(WeightsError, match=reason):
        _run("http://127.0.0.1:9", specs)


@pytest.mark.parametrize(
    ("repo", "reason"),
    [
        (fixtures.BROKEN_MASK_STRING, "mask_token_id must be an integer, got str"),
        (fixtures.BROKEN_LAYER_IDS, "target_layer_ids [9] are outside the target's layers 0..7"),
        (fixtures.BROKEN_NO_BLOCK_SIZE, "block_size is missing"),
    ],
)
def test_each_broken_fixture_drafter_is_rejected_after_download(hub, tmp_path, repo, reason):
    _run(hub.url, _specs(tmp_path, drafter=repo))
    load = lambda name: json.loads((tmp_path / name).read_text())  # noqa: E731 - three one-line reads
    check = check_dflash_drafter(load("drafter/config.json"), load("target/config.json"),
                                 tokenizer_json=load("target/tokenizer.json"))
    assert any(reason in e for e in check.errors), check.errors


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_disk_too_small_on_a_real_tmpfs_fails_before_writing(hub_root, hub, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(small)], check=True)
    try:
        with pytest.raises(WeightsError) as error:
            _run(hub.url, _specs(small / "models"))
        assert f"more on {small} (drafter" in str(error.value)
        assert fs_info(str(small / "models")).mount == str(small)
        assert list(small.iterdir()) == []
        assert hub.resolve_requests("GET") == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_hub_that_lists_a_gated_repo_but_refuses_its_files_fails_at_the_plan(hub, tmp_path):
    # The public hub answers model_info for gated repos and refuses only the files: the probe catches it.
    def public_listing(repo_id, revision, *, endpoint, token):
        return hf_fetch.remote_listing(repo_id, revision, endpoint=endpoint, token=TOKEN)

    with pytest.raises(WeightsError, match=r"is gated.*model_weights_hf_token"):
        run(_specs(tmp_path, target=fixtures.TARGET_GATED), Options(endpoint=hub.url), listing=public_listing,
            fetch=hf_fetch.download, describe=hf_fetch.describe_error, forget=hf_fetch.forget_local_copy,
            now="t", probe=hf_fetch.probe_access)
    assert hub.resolve_requests("GET") == []
    assert len(hub.resolve_requests("HEAD")) == 2


def test_a_connection_cut_mid_file_is_resumed_in_the_same_run_with_a_range_request(tmp_path):
    # huggingface_hub 2.4 retries a dropped body with Range from the last whole 10 MiB chunk it wrote; check
    # that the bytes it stitches together are exactly the file (its resume code has had bugs: #3648, #4196).
    sha = "ab" * 20
    repo = tmp_path / "hub" / "specgate-fixtures" / "big"
    (repo / sha).mkdir(parents=True)
    data = bytes(range(256)) * (25 * 1024 * 1024 // 256) + b"tail"
    (repo / sha / "big.safetensors").write_bytes(data)
    (repo / "repo.json").write_text(json.dumps({"gated": False, "branches": {"main": sha}, "commits": [sha]}))
    with running_hub(tmp_path / "hub") as big_hub:
        httpx.post(f"{big_hub.url}/_admin/cut", json={"after_bytes": 15 * 1024 * 1024, "times": 1}).raise_for_status()
        spec = [SnapshotSpec(name="target", repo_id="specgate-fixtures/big", revision="main",
                             local_dir=str(tmp_path / "out"))]
        result = _run(big_hub.url, spec)
        ranges = [r["range"] for r in big_hub.resolve_requests("GET")]
    assert (tmp_path / "out" / "big.safetensors").read_bytes() == data
    assert ranges == [None, f"bytes={10 * 1024 * 1024}-"]
    assert result["snapshots"][0]["fetched"] == ["big.safetensors"]
