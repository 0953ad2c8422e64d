#!/usr/bin/python
"""Ansible module: read weight files into the page cache while the old release still serves."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.page_cache import (
    DEFAULT_PATTERNS,
    mem_available_bytes,
    plan_prefetch,
    prefetch,
    weight_files,
)

DOCUMENTATION = r"""
---
module: page_cache_prefetch
short_description: Read model weight files into the page cache so the next engine start loads from memory
description:
  - Reads every file under I(paths) matching I(patterns) sequentially, end to end, so the kernel keeps
    its pages cached; the engine started next reads them from memory instead of the disk.
  - Skips (C(changed=false), with C(skipped_reason)) when the files exceed I(max_fraction) of the host's
    available memory, because a prefetch that evicts its own first files helps nobody and pushes out the
    serving engine's pages.
  - Does not change any file. Reports C(changed=true) when it read something, so a run shows the work.
  - Supports check mode (plans only).
version_added: "0.1.0"
author: specgate
options:
  paths:
    description: Weight directories or files (target and drafter).
    type: list
    elements: path
    required: true
  patterns:
    description: File name globs to read.
    type: list
    elements: str
    default: ["*.safetensors", "*.bin", "*.pt", "*.gguf"]
  max_fraction:
    description: Largest share of MemAvailable the files may take.
    type: float
    default: 0.5
"""

EXAMPLES = r"""
- name: Read the candidate's weights into the page cache while the old release still serves
  page_cache_prefetch:
    paths: [/models/kimi-k2.6, /models/kimi-k2.6-dflash]
    max_fraction: 0.5
"""

RETURN = r"""
files:
  description: Number of files read (or planned in check mode / when skipped).
  returned: always
  type: int
total_bytes:
  description: Size of the matched files.
  returned: always
  type: int
budget_bytes:
  description: I(max_fraction) of MemAvailable.
  returned: always
  type: int
seconds:
  description: Time the read took.
  returned: when read
  type: float
gb_per_s:
  description: Read rate.
  returned: when read
  type: float
skipped_reason:
  description: Why nothing was read; empty otherwise.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "path", "required": True},
            "patterns": {"type": "list", "elements": "str", "default": list(DEFAULT_PATTERNS)},
            "max_fraction": {"type": "float", "default": 0.5},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not 0 < p["max_fraction"] <= 1:
        module.fail_json(msg=f"max_fraction must be in (0, 1], got {p['max_fraction']}")
    try:
        files = weight_files(p["paths"], p["patterns"])
    except FileNotFoundError as exc:
        module.fail_json(msg=str(exc))
    plan = plan_prefetch(files, mem_available_bytes(), p["max_fraction"])
    result = {
        "files": len(plan.files),
        "total_bytes": plan.total_bytes,
        "budget_bytes": plan.budget_bytes,
        "skipped_reason": "",
    }
    if not plan.fits:
        result["skipped_reason"] = (
            f"{plan.total_bytes / 1e9:.1f} GB of weights exceed {p['max_fraction']:.0%} of available memory "
            f"({plan.budget_bytes / 1e9:.1f} GB)"
        )
        module.exit_json(changed=False, **result)
    if module.check_mode or not plan.files:
        module.exit_json(changed=bool(plan.files), **result)
    done = prefetch(plan.files)
    module.exit_json(changed=True, **result, **{k: v for k, v in done.as_dict().items() if k != "files"})


if __name__ == "__main__":
    main()
