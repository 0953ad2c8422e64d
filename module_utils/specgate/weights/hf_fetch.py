"""The only code that talks to the hub: listing a pinned revision and downloading exactly the planned files.

Imported on the managed host, with huggingface_hub from the service venv (the role runs hf_snapshot with that
interpreter). Errors become one-line messages naming the variable to fix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ansible.module_utils.specgate.weights.weights_plan import HF_LOCAL_CACHE, RemoteFile, exact_pattern, setting_of

# Progress bars would only land in the module's captured stderr; progress is reported by weights_progress.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class HubError(Exception):
    """A hub answer the play cannot continue from, with the fix in the message."""


def _token(token: str | None) -> str | bool:
    # False, not None: never fall back to a token lying around on the host (HF_TOKEN, ~/.cache/huggingface).
    return token if token else False


def describe_error(error: Exception, *, name: str, repo_id: str, revision: str, endpoint: str | None,
                   setting: str = "") -> str:  # fmt: skip
    """Map huggingface_hub's exceptions to what the operator should change: ``setting`` is how the user sets this
    snapshot, with {field} for repo or revision (SnapshotSpec.setting; empty: model_weights_<name>_<field>)."""

    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = endpoint or "the default hub"
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, GatedRepoError):
        return (f"{name}: {repo_id} is gated and the hub refused access (HTTP {status}): set model_weights_hf_token "
                "to a token whose account was granted access")
    if isinstance(error, RevisionNotFoundError):
        return (f"{name}: revision {revision!r} not found in {repo_id} on {where}: "
                f"check {setting_of(name, setting, 'revision')}")
    if isinstance(error, RepositoryNotFoundError):
        return (f"{name}: repository {repo_id} not found on {where} (HTTP {status}): "
                f"check {setting_of(name, setting, 'repo')} (a private repo also needs model_weights_hf_token)")
    if isinstance(error, HfHubHTTPError) and status == 401:
        return f"{name}: the hub at {where} rejected the token (HTTP 401): check model_weights_hf_token"
    return f"{name}: {repo_id}@{revision} on {where}: {type(error).__name__}: {error}"


def remote_listing(
    repo_id: str, revision: str, *, endpoint: str | None, token: str | None
) -> tuple[str, list[RemoteFile]]:
    """(commit sha, files with size and sha256/blob id) of a repo at a revision: one metadata call."""
    from huggingface_hub import HfApi

    info = HfApi(endpoint=endpoint or None, token=_token(token)).model_info(
        repo_id, revision=revision, files_metadata=True
    )
    files = [
        RemoteFile(
            path=s.rfilename,
            size=int(s.size or 0),
            sha256=s.lfs.sha256 if s.lfs is not None else None,
            blob_id=s.blob_id,
        )
        for s in info.siblings or []
    ]
    return str(info.sha), files


def probe_access(repo_id: str, commit: str, path: str, *, endpoint: str | None, token: str | None) -> None:
    """HEAD one file: raises what a download of it would (gated without a grant, bad token), transfers nothing."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    url = hf_hub_url(repo_id, path, revision=commit, endpoint=endpoint or None)
    get_hf_file_metadata(url, token=_token(token), endpoint=endpoint or None)


def forget_local_copy(local_dir: str, relative: str) -> None:
    """Remove a file and huggingface_hub's note about it, so the client fetches it again instead of trusting it.

    huggingface_hub 2.4 returns a local_dir file as-is when its metadata names the same commit, whatever its size.
    """
    parts = relative.split("/")
    Path(local_dir, *parts).unlink(missing_ok=True)
    Path(local_dir, HF_LOCAL_CACHE, "huggingface", "download", *parts[:-1], parts[-1] + ".metadata").unlink(
        missing_ok=True
    )


def download(
    repo_id: str,
    commit: str,
    local_dir: str,
    paths: Sequence[str],
    *,
    endpoint: str | None,
    token: str | None,
    max_workers: int,
) -> None:
    """Fetch exactly `paths` at `commit` into local_dir (pinned by sha, so a moving branch cannot mix commits)."""
    from huggingface_hub import snapshot_download

    if not paths:
        return
    snapshot_download(
        repo_id,
        revision=commit,
        local_dir=local_dir,
        allow_patterns=[exact_pattern(p) for p in paths],
        endpoint=endpoint or None,
        token=_token(token),
        max_workers=max_workers,
    )
