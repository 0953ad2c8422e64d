"""What model_weights leaves on the host: the served files, their sizes, the manifest, owner and mode."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

HUB = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / ".cache" / "molecule-weights" / "hub"
TOKEN = "hf_specgate_molecule_token"
REPOS = {
    "target": "specgate-fixtures/kimi-k26-tiny-gated",
    "drafter": "specgate-fixtures/kimi-k26-dflash-b8",
}

testinfra_hosts = ["podman://specgate-weights"]


def served(repo: str) -> tuple[str, dict[str, int]]:
    sha = json.loads((HUB / repo / "repo.json").read_text())["branches"]["main"]
    return sha, {p.name: p.stat().st_size for p in (HUB / repo / sha).iterdir() if p.is_file()}


@pytest.mark.parametrize("repo", REPOS.values())
def test_every_served_file_is_on_the_host_at_its_size(host, repo):
    _sha, files = served(repo)
    for name, size in files.items():
        remote = host.file(f"/models/{repo}/{name}")
        assert remote.is_file, name
        assert remote.size == size, name


@pytest.mark.parametrize("repo", REPOS.values())
def test_manifest_names_the_pinned_commit_and_every_file(host, repo):
    sha, files = served(repo)
    manifest = json.loads(host.file(f"/models/{repo}/.specgate-manifest.json").content_string)
    assert manifest["repo_id"] == repo
    assert manifest["commit"] == sha
    assert {f["path"]: f["size"] for f in manifest["files"]} == files
    # verify_sha256 is on in converge: every LFS file's hash was checked and recorded
    assert all(len(f["sha256"]) == 64 for f in manifest["files"] if f["path"].endswith(".safetensors"))


@pytest.mark.parametrize("repo", REPOS.values())
def test_weights_belong_to_the_service_user_and_are_world_readable(host, repo):
    for name in served(repo)[1]:
        remote = host.file(f"/models/{repo}/{name}")
        assert remote.user == "sglang"
        assert remote.group == "sglang"
        assert remote.mode & 0o444 == 0o444
        assert remote.mode & 0o022 == 0


def test_no_partial_download_or_progress_report_is_left(host):
    leftovers = host.run("find /models -name '*.incomplete' -o -name '.specgate-download-progress.json'")
    assert leftovers.rc == 0
    assert leftovers.stdout.strip() == ""


def test_the_hub_token_is_written_nowhere_on_the_host(host):
    home = host.user().home  # the connection user's: where Ansible keeps async results and module temp files
    places = [p for p in ("/models", f"{home}/.ansible_async", f"{home}/.ansible", "/tmp", "/var/tmp")
              if host.file(p).is_directory]
    # The weights and the async download's job files must be there to be searched: a grep of nothing proves nothing.
    assert "/models" in places
    assert f"{home}/.ansible_async" in places
    found = host.run(f"grep -rl {TOKEN} {' '.join(places)}")
    assert found.rc == 1, f"grep found the token (rc 0) or failed (rc 2): {found.stdout}{found.stderr}"
