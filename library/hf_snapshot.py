#!/usr/bin/python
"""Ansible module: plan, disk-check, download, verify and record model snapshots from a Hugging Face hub."""

from __future__ import annotations

import datetime
import importlib.util

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.weights import hf_fetch
from ansible.module_utils.specgate.weights.weights_plan import GB
from ansible.module_utils.specgate.weights.weights_snapshot import (
    Options,
    SnapshotSpec,
    WeightsError,
    run,
    summary_line,
)

DOCUMENTATION = r"""
---
module: hf_snapshot
short_description: Download pinned model snapshots from a Hugging Face hub, only after they fit on disk
description:
  - Lists every snapshot's files at its revision from hub metadata (one call each), compares sizes with what is
    already on disk and sums what is still missing per filesystem, so a target and a drafter sharing C(/models)
    are counted together. Fails before downloading anything when the bytes still needed plus O(headroom_gb)
    exceed the free space, with a message such as
    "need 548.3 GB more on /models (target 541.8 GB + drafter 6.5 GB), 30.1 GB free".
  - Downloads only the missing files with huggingface_hub's C(snapshot_download), pinned to the listed commit
    sha. A file of the wrong size on disk is removed with huggingface_hub's note about it and fetched again
    (huggingface_hub itself would keep it).
  - After downloading, checks every file size (and its sha256 or git blob id with O(verify_sha256)); a file that
    fails is removed, never kept. Writes C(.specgate-manifest.json) in each snapshot directory.
  - A re-run with everything present reads metadata only and reports C(changed=false).
  - Snapshots with C(local_path) are pre-staged directories (local disk or NFS), checked and never written to,
    no hub needed.
  - Run it async and read O(progress_file) to show bytes done/total, rate and ETA while it runs.
  - Supports check mode, which reports the plan and the disk check and changes nothing.
version_added: "0.1.0"
author: specgate
requirements:
  - huggingface_hub >= 2.0 in the Python that runs the module (the service venv).
options:
  snapshots:
    description: Snapshots to ensure, downloaded in this order.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Short name used in messages and results, e.g. C(target), C(drafter).
        type: str
        required: true
      repo_id:
        description: Hub repo C(org/name). Leave empty with O(snapshots[].local_path).
        type: str
      revision:
        description: Commit sha (recommended) or branch/tag to pin.
        type: str
      local_dir:
        description: Absolute directory the snapshot is downloaded into.
        type: str
      local_path:
        description: Pre-staged directory to use as is instead of downloading.
        type: str
      setting:
        description:
          - How the user sets this snapshot, with C({field}) for C(repo), C(revision) or C(local_path), named in
            messages, e.g. C(model_weights_drafters['dflash-b16'].{field}). Empty means C(model_weights_<name>_{field}).
        type: str
        default: ""
      allow_patterns:
        description: Only files matching one of these fnmatch patterns.
        type: list
        elements: str
      ignore_patterns:
        description: Skip files matching one of these fnmatch patterns.
        type: list
        elements: str
      manifest:
        description: Write C(.specgate-manifest.json). Off for partial fetches (e.g. config files only).
        type: bool
        default: true
  endpoint:
    description: Hub URL; empty uses huggingface_hub's default (C(HF_ENDPOINT) or the public hub).
    type: str
    default: ""
  token:
    description: Hub token for gated or private repos. Never logged; empty means anonymous (a token stored
      on the host is not picked up).
    type: str
    default: ""
  headroom_gb:
    description: Extra GB (10^9 bytes) that must stay free after the download.
    type: float
    default: 0
  max_workers:
    description: Files downloaded in parallel.
    type: int
    default: 8
  verify_sha256:
    description: Also check content against the hub's sha256 (LFS) or git blob id; reads every byte once per
      file (results are remembered in the manifest).
    type: bool
    default: false
  progress_file:
    description: File the module rewrites every few seconds with bytes done/total, rate and ETA (JSON).
    type: str
  disk_advice:
    description: Said after the disk check's refusal (the snapshots do not fit), e.g. the variables that make room.
    type: str
"""

EXAMPLES = r"""
- name: Download target and drafter once both fit on /models
  hf_snapshot:
    snapshots:
      - {name: drafter, repo_id: z-lab/Kimi-K2.6-DFlash, revision: 0123abcd..., local_dir: /models/drafter}
      - {name: target, repo_id: moonshotai/Kimi-K2.6, revision: 4567ef01..., local_dir: /models/target}
    token: "{{ model_weights_hf_token }}"
    headroom_gb: 20
    progress_file: /var/tmp/specgate-weights-progress.json
  async: 86400
  poll: 0
  register: __weights_download_job
"""

RETURN = r"""
snapshots:
  description: Per snapshot - name, source (hub/local), repo_id, revision, commit, path, file_count, total_bytes,
    needed_bytes, missing, wrong_size, fetched, fetched_bytes, sha256_checked, sha256_unpublished, manifest_changed.
  returned: always
  type: list
  elements: dict
disk:
  description: Per filesystem - mount, free_bytes, needed_bytes, headroom_bytes, parts (bytes per snapshot), fits,
    message.
  returned: when the hub could be listed
  type: list
  elements: dict
msg:
  description: One line; on failure what to change.
  returned: always
  type: str
"""

ARGUMENT_SPEC = {
    "snapshots": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {
            "name": {"type": "str", "required": True},
            "repo_id": {"type": "str"},
            "revision": {"type": "str"},
            "local_dir": {"type": "str"},
            "local_path": {"type": "str"},
            "allow_patterns": {"type": "list", "elements": "str"},
            "ignore_patterns": {"type": "list", "elements": "str"},
            "manifest": {"type": "bool", "default": True},
            "setting": {"type": "str", "default": ""},
        },
    },
    "endpoint": {"type": "str", "default": ""},
    "token": {"type": "str", "default": "", "no_log": True},
    "headroom_gb": {"type": "float", "default": 0},
    "max_workers": {"type": "int", "default": 8},
    "verify_sha256": {"type": "bool", "default": False},
    "progress_file": {"type": "str"},
    "disk_advice": {"type": "str"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    if params["max_workers"] < 1 or params["headroom_gb"] < 0:
        module.fail_json(
            msg="max_workers must be >= 1 and headroom_gb >= 0 (model_weights_max_workers, model_weights_headroom_gb)"
        )
    specs = [SnapshotSpec.from_params(raw) for raw in params["snapshots"]]
    options = Options(
        endpoint=params["endpoint"] or None,
        token=params["token"] or None,
        headroom_bytes=int(params["headroom_gb"] * GB),
        max_workers=params["max_workers"],
        verify_sha256=params["verify_sha256"],
        progress_file=params["progress_file"] if not module.check_mode else None,
        check_mode=module.check_mode,
        disk_advice=params["disk_advice"],
    )
    uses_hub = any(spec.repo_id and not spec.local_path for spec in specs)
    if uses_hub and importlib.util.find_spec("huggingface_hub") is None:
        module.fail_json(
            msg="huggingface_hub is not importable by the Python running hf_snapshot: run it with the "
            "service venv's interpreter (fact specgate_sglang_env.python or model_weights_python)"
        )
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    try:
        result = run(
            specs,
            options,
            listing=hf_fetch.remote_listing,
            fetch=hf_fetch.download,
            describe=hf_fetch.describe_error,
            forget=hf_fetch.forget_local_copy,
            now=now,
            probe=hf_fetch.probe_access,
        )
    except WeightsError as error:
        module.fail_json(msg=str(error), **error.result)
    for snapshot in result.get("snapshots", []):
        if snapshot.get("sha256_unpublished"):
            module.warn(f"{snapshot['name']}: the hub publishes no sha256/blob id for "
                        f"{', '.join(snapshot['sha256_unpublished'][:5])}; only their sizes were checked")
    module.exit_json(msg=summary_line(result), **result)


if __name__ == "__main__":
    main()
