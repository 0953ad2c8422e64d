"""hf_snapshot's logic: plan every snapshot → one disk check → download → verify → manifest.

Order matters and is the point of the role: nothing is downloaded unless target and drafter fit together,
and nothing that fails a size or hash check is left on disk to be trusted by the next run.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible.module_utils.specgate.common.progress import ProgressWriter
from ansible.module_utils.specgate.weights.weights_manifest import (
    build_manifest,
    content_mismatch,
    manifest_differs,
    read_manifest,
    verified_hashes,
    write_manifest,
)
from ansible.module_utils.specgate.weights.weights_plan import (
    GB,
    HF_LOCAL_CACHE,
    MANIFEST_NAME,
    RemoteFile,
    SnapshotPlan,
    disk_failures,
    disk_needs,
    fs_info,
    plan_snapshot,
    select_files,
    setting_of,
)
from ansible.module_utils.specgate.weights.weights_progress import bytes_on_disk, progress_report

Listing = Callable[..., tuple[str, list[RemoteFile]]]
Fetch = Callable[..., None]


class WeightsError(Exception):
    """A failure with a message naming what to change; `result` carries the plan so far."""

    def __init__(self, message: str, result: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result = dict(result or {})


@dataclass
class SnapshotSpec:
    name: str
    local_dir: str
    repo_id: str | None = None
    revision: str | None = None
    local_path: str | None = None
    allow_patterns: list[str] | None = None
    ignore_patterns: list[str] | None = None
    manifest: bool = True
    # How the user sets this snapshot, with {field} for repo, revision or local_path: model_weights_target_{field},
    # model_weights_drafters['dflash-b16'].{field}. Empty: model_weights_<name>_{field}.
    setting: str = ""

    def variable(self, field: str) -> str:
        """The setting a message tells the user to change for ``field`` (repo, revision, local_path)."""
        return setting_of(self.name, self.setting, field)

    @classmethod
    def from_params(cls, raw: Mapping[str, Any]) -> SnapshotSpec:
        return cls(
            name=raw["name"],
            local_dir=raw.get("local_dir") or "",
            repo_id=raw.get("repo_id") or None,
            revision=raw.get("revision") or None,
            local_path=raw.get("local_path") or None,
            allow_patterns=list(raw.get("allow_patterns") or []) or None,
            ignore_patterns=list(raw.get("ignore_patterns") or []) or None,
            manifest=bool(raw.get("manifest", True)),
            setting=raw.get("setting") or "",
        )



@dataclass
class Options:
    endpoint: str | None = None
    token: str | None = None
    headroom_bytes: int = 0
    max_workers: int = 8
    verify_sha256: bool = False
    progress_file: str | None = None
    check_mode: bool = False
    disk_advice: str | None = None  # appended to a disk refusal: the variables to change (the role's words)


@dataclass
class Outcome:
    """Per snapshot: its plan and what this run did to it."""

    spec: SnapshotSpec
    plan: SnapshotPlan
    fetched: list[str] = field(default_factory=list)
    hashed: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    manifest_changed: bool = False

    def as_dict(self) -> dict[str, Any]:
        data = self.plan.as_dict()
        data.update({
            "source": "local" if self.spec.local_path else "hub",
            "fetched": self.fetched,
            "fetched_bytes": sum(f.size for f in self.plan.files if f.path in set(self.fetched)),
            "sha256_checked": self.hashed,
            "sha256_unpublished": self.unverifiable,
            "manifest_changed": self.manifest_changed,
        })
        return data


def validate_specs(specs: Sequence[SnapshotSpec]) -> list[str]:
    """Input errors, each naming the variable; found before anything is read from the hub or written."""
    errors = []
    dirs: dict[str, str] = {}
    for spec in specs:
        if spec.local_path:
            if spec.repo_id:
                errors.append(f"{spec.name}: set either {spec.variable('repo')} or {spec.variable('local_path')}, "
                              "not both")
            continue
        if not spec.repo_id:
            errors.append(f"{spec.name}: {spec.variable('repo')} is empty; name a hub repo (org/name) or set "
                          f"{spec.variable('local_path')}")
        elif spec.repo_id.count("/") != 1 or not all(spec.repo_id.split("/")):
            errors.append(f"{spec.name}: {spec.variable('repo')} {spec.repo_id!r} is not 'org/name'")
        if not spec.revision:
            errors.append(f"{spec.name}: {spec.variable('revision')} is empty; pin a commit sha "
                          "(or at least a branch name)")
        if not spec.local_dir or not os.path.isabs(spec.local_dir):
            errors.append(
                f"{spec.name}: download directory {spec.local_dir!r} must be an absolute path (model_weights_dir)"
            )
        elif spec.manifest:
            other = dirs.setdefault(os.path.normpath(spec.local_dir), spec.name)
            if other != spec.name:
                errors.append(f"{spec.name} and {other} would download into the same directory {spec.local_dir}")
    return errors


def plan_local(spec: SnapshotSpec) -> SnapshotPlan:
    """A pre-staged directory (local disk, NFS): what it must hold, from its manifest or its shard index."""
    root = Path(spec.local_path or "")
    if not root.is_dir():
        raise WeightsError(f"{spec.name}: {spec.variable('local_path')} {root} is not a directory on the host")
    manifest = read_manifest(str(root))
    if manifest and isinstance(manifest.get("files"), list):
        files = [RemoteFile(path=f["path"], size=int(f["size"]), sha256=f.get("sha256")) for f in manifest["files"]]
    else:
        files = [
            RemoteFile(path=p.relative_to(root).as_posix(), size=p.stat().st_size)
            for p in sorted(root.rglob("*"))
            if p.is_file() and HF_LOCAL_CACHE not in p.relative_to(root).parts and p.name != MANIFEST_NAME
        ]
        index = root / "model.safetensors.index.json"
        if index.is_file():
            names = {f.path for f in files}
            shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
            absent = [s for s in shards if s not in names]
            if absent:
                raise WeightsError(f"{spec.name}: {root} lacks shards its index names: {', '.join(absent[:5])}")
    plan = plan_snapshot(name=spec.name, repo_id="", revision="", commit=(manifest or {}).get("commit") or "",
                         local_dir=str(root), files=files)
    if not any(f.path == "config.json" for f in files):
        raise WeightsError(
            f"{spec.name}: {root} has no config.json; is {spec.variable('local_path')} a model dir?"
        )
    if plan.missing:
        raise WeightsError(
            f"{spec.name}: pre-staged {root} is incomplete (missing or wrong size: "
            f"{', '.join(f.path for f in plan.missing[:5])}); {spec.variable('local_path')} is never written to"
        )
    return plan


def plan_all(specs: Sequence[SnapshotSpec], options: Options, listing: Listing, describe: Callable[..., str],
             probe: Callable[..., None] | None = None) -> list[SnapshotPlan]:
    plans = []
    for spec in specs:
        if spec.local_path:
            plans.append(plan_local(spec))
            continue
        try:
            commit, files = listing(spec.repo_id, spec.revision, endpoint=options.endpoint, token=options.token)
        except Exception as error:  # every hub failure becomes one message naming the variable
            raise WeightsError(describe(error, name=spec.name, repo_id=spec.repo_id, revision=spec.revision,
                                        endpoint=options.endpoint, setting=spec.setting)) from error
        selected = select_files(files, spec.allow_patterns, spec.ignore_patterns)
        if not selected:
            raise WeightsError(f"{spec.name}: no file of {spec.repo_id}@{spec.revision} matches the allow/ignore "
                               "patterns (model_weights_allow_patterns / model_weights_ignore_patterns)")
        plan = plan_snapshot(name=spec.name, repo_id=spec.repo_id or "", revision=spec.revision or "",
                             commit=commit, local_dir=spec.local_dir, files=selected)
        if plan.missing and probe is not None:
            # The public hub lists a gated repo's files to anyone and refuses only the files themselves:
            # ask for one file's metadata now, so a missing grant fails the plan, not the download.
            try:
                probe(plan.repo_id, commit, plan.missing[0].path, endpoint=options.endpoint, token=options.token)
            except Exception as error:  # any refusal becomes one message naming the variable
                raise WeightsError(describe(error, name=spec.name, repo_id=spec.repo_id, revision=spec.revision,
                                            endpoint=options.endpoint, setting=spec.setting)) from error
        plans.append(plan)
    return plans


def run(
    specs: Sequence[SnapshotSpec],
    options: Options,
    *,
    listing: Listing,
    fetch: Fetch,
    describe: Callable[..., str],
    forget: Callable[[str, str], None],
    now: str,
    fs_of: Callable[[str], Any] = fs_info,
    probe: Callable[..., None] | None = None,
) -> dict[str, Any]:
    errors = validate_specs(specs)
    if errors:
        raise WeightsError("; ".join(errors))
    plans = plan_all(specs, options, listing, describe, probe)
    outcomes = [Outcome(spec, plan) for spec, plan in zip(specs, plans, strict=True)]
    hub_outcomes = [o for o in outcomes if not o.spec.local_path]
    needs = disk_needs([o.plan for o in hub_outcomes], options.headroom_bytes, fs_of)
    result: dict[str, Any] = {"disk": [n.as_dict() for n in needs]}
    failures = disk_failures(needs)
    if failures:
        result["snapshots"] = [o.as_dict() for o in outcomes]
        advice = f". {options.disk_advice}" if options.disk_advice else ""
        raise WeightsError("not enough disk before downloading anything: " + "; ".join(failures) + advice, result)

    if options.check_mode:
        changed = any(not o.plan.complete or _manifest_would_change(o, options) for o in hub_outcomes)
        # `pending` survives a task's changed_when: false, so a plan task can stay quiet and still steer the role.
        result.update(changed=changed, pending=changed, snapshots=[o.as_dict() for o in outcomes])
        return result

    _download(hub_outcomes, options, fetch=fetch, describe=describe, forget=forget, result=result)
    for outcome in hub_outcomes:
        _verify_and_record(outcome, options, forget=forget, now=now, result=result, outcomes=outcomes)
    result.update(
        changed=any(o.fetched or o.manifest_changed for o in outcomes),
        snapshots=[o.as_dict() for o in outcomes],
    )
    return result


def _manifest_would_change(outcome: Outcome, options: Options) -> bool:
    if not outcome.spec.manifest:
        return False
    manifest = _manifest_for(outcome, read_manifest(outcome.plan.local_dir), options, hashed=set())
    return manifest_differs(read_manifest(outcome.plan.local_dir), manifest)


def _manifest_for(outcome: Outcome, existing: Mapping[str, Any] | None, options: Options, hashed: set[str]
                  ) -> dict[str, Any]:
    # A file keeps its recorded sha256 while the hub still publishes the same one, even on runs that skip hashing.
    verified = verified_hashes(existing, outcome.plan.files) | hashed
    return build_manifest(
        repo_id=outcome.spec.repo_id, revision=outcome.spec.revision, commit=outcome.plan.commit, source="hub",
        files=outcome.plan.files, verified=verified, allow_patterns=outcome.spec.allow_patterns,
        ignore_patterns=outcome.spec.ignore_patterns,
    )


def _download(outcomes: Sequence[Outcome], options: Options, *, fetch: Fetch, describe: Callable[..., str],
              forget: Callable[[str, str], None], result: dict[str, Any]) -> None:
    pending = [o for o in outcomes if not o.plan.complete]
    if not pending:
        return
    total = sum(o.plan.total_bytes for o in outcomes)
    for outcome in pending:
        Path(outcome.plan.local_dir).mkdir(parents=True, exist_ok=True)
        for stale in outcome.plan.wrong_size:
            forget(outcome.plan.local_dir, stale)

    started = time.monotonic()
    baseline = sum(bytes_on_disk(o.plan.local_dir, o.plan.files) for o in outcomes)

    def measure() -> dict[str, Any]:
        done = sum(bytes_on_disk(o.plan.local_dir, o.plan.files) for o in outcomes)
        return progress_report(done=done, total=total, baseline=baseline, elapsed=time.monotonic() - started,
                               label="weights")

    writer = ProgressWriter(options.progress_file, measure) if options.progress_file else None
    if writer:
        writer.start()
    try:
        for outcome in pending:
            plan = outcome.plan
            try:
                fetch(plan.repo_id, plan.commit, plan.local_dir, [f.path for f in plan.missing],
                      endpoint=options.endpoint, token=options.token, max_workers=options.max_workers)
            except Exception as error:  # reported with what is kept and how to resume
                kept = sum(1 for f in plan.missing if _size(plan.local_dir, f) == f.size)
                result["snapshots"] = [o.as_dict() for o in outcomes]
                raise WeightsError(
                    describe(error, name=plan.name, repo_id=plan.repo_id, revision=plan.commit,
                             endpoint=options.endpoint, setting=outcome.spec.setting)
                    + f" — download interrupted; {kept} of {len(plan.missing)} missing files are complete and kept,"
                    " partial files were discarded: re-run to resume",
                    result,
                ) from error
            outcome.fetched = [f.path for f in plan.missing]
    finally:
        if writer:
            writer.stop()


def _size(local_dir: str, remote: RemoteFile) -> int | None:
    path = os.path.join(local_dir, *remote.path.split("/"))
    return os.path.getsize(path) if os.path.isfile(path) else None


def _verify_and_record(outcome: Outcome, options: Options, *, forget: Callable[[str, str], None], now: str,
                       result: dict[str, Any], outcomes: Sequence[Outcome]) -> None:
    plan = outcome.plan
    wrong = [f for f in plan.files if _size(plan.local_dir, f) != f.size]
    if wrong:
        for remote in wrong:
            forget(plan.local_dir, remote.path)
        result["snapshots"] = [o.as_dict() for o in outcomes]
        detail = ", ".join(f"{f.path} (expected {f.size} bytes)" for f in wrong[:5])
        raise WeightsError(f"{plan.name}: size check failed after download, removed: {detail}; re-run to fetch "
                           "them again", result)
    existing = read_manifest(plan.local_dir)
    hashed: set[str] = set()
    if options.verify_sha256:
        # Every byte, every run: a manifest entry proves what was read then, not that the disk still holds it.
        for remote in plan.files:
            if not remote.sha256 and not remote.blob_id:
                outcome.unverifiable.append(remote.path)
                continue
            mismatch = content_mismatch(plan.local_dir, remote)
            if mismatch:
                forget(plan.local_dir, remote.path)
                result["snapshots"] = [o.as_dict() for o in outcomes]
                raise WeightsError(f"{plan.name}: content check failed, removed {mismatch}; re-run to fetch it "
                                   "again", result)
            outcome.hashed.append(remote.path)
            if remote.sha256:
                hashed.add(remote.path)
    if not outcome.spec.manifest:
        return
    manifest = _manifest_for(outcome, existing, options, hashed)
    if manifest_differs(existing, manifest):
        write_manifest(plan.local_dir, manifest, now)
        outcome.manifest_changed = True


def summary_line(result: Mapping[str, Any]) -> str:
    parts = []
    for snap in result.get("snapshots", []):
        parts.append(f"{snap['name']} {snap['total_bytes'] / GB:.1f} GB at {snap['path']}"
                     f" ({len(snap['fetched'])} files fetched)")
    return "; ".join(parts)
