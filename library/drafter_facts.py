#!/usr/bin/python
"""Ansible module: a speculative drafter's facts (trained block size, depth, target layers, mask token), checked."""

from __future__ import annotations

import json
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.weights.drafter_facts import check_dflash_drafter

DOCUMENTATION = r"""
---
module: drafter_facts
short_description: Read a DFlash drafter's config.json as SGLang does and check it strictly against the target
description:
  - Reads C(block_size), C(num_hidden_layers), C(target_layer_ids), C(mask_token) and C(mask_token_id) from
    C(dflash_config) first and the top level second, as SGLang 0.5.23's C(parse_dflash_draft_config) does.
  - Fails on what SGLang would only warn about and then run wrongly, namely a missing or non-integer block size,
    target layer ids outside the target's layers, a mask token id that is not an integer below the target vocabulary
    or disagrees with the target tokenizer, and architectures without C(DFlashDraftModel).
  - Warns (does not fail) when O(requested_block_size) exceeds the trained block size.
  - Reads files only; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  drafter_path:
    description: Directory holding the drafter's C(config.json).
    type: path
    required: true
  target_path:
    description: Directory holding the target's C(config.json) (and C(tokenizer.json) when present).
    type: path
    required: true
  kind:
    description: C(dflash) checks a DFlash drafter (also used by DDTree); C(other) (EAGLE-3, MTP) only reads its depth.
    type: str
    choices: [dflash, other]
    default: dflash
  requested_block_size:
    description: Block size the deployment asks for; above the trained one gives a warning.
    type: int
  target_layers:
    description: Override the target's layer count when its config.json does not state it plainly.
    type: int
"""

EXAMPLES = r"""
- name: Check the drafter fits the target before the 550 GB download
  drafter_facts:
    drafter_path: /models/drafter
    target_path: /models/target
    requested_block_size: 16
  register: __weights_drafter
"""

RETURN = r"""
drafter:
  description: block_size, num_hidden_layers, target_layer_ids, mask_token_id (nulls where the kind has none).
  returned: success
  type: dict
problems:
  description: Every hard incompatibility found (the module fails when non-empty).
  returned: always
  type: list
  elements: str
"""


def _load_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise ValueError(f"{what} {path} does not exist") from error
    except json.JSONDecodeError as error:
        raise ValueError(f"{what} {path} is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path} is not a JSON object")
    return data


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "drafter_path": {"type": "path", "required": True},
            "target_path": {"type": "path", "required": True},
            "kind": {"type": "str", "choices": ["dflash", "other"], "default": "dflash"},
            "requested_block_size": {"type": "int"},
            "target_layers": {"type": "int"},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        drafter = _load_json(Path(params["drafter_path"]) / "config.json", "drafter config")
        target = _load_json(Path(params["target_path"]) / "config.json", "target config")
        tokenizer_file = Path(params["target_path"]) / "tokenizer.json"
        tokenizer = _load_json(tokenizer_file, "target tokenizer") if tokenizer_file.is_file() else None
    except ValueError as error:
        module.fail_json(msg=str(error), problems=[str(error)])
    if params["kind"] == "other":
        layers = drafter.get("num_hidden_layers")
        facts = {
            "block_size": None,
            "num_hidden_layers": layers if isinstance(layers, int) else None,
            "target_layer_ids": None,
            "mask_token_id": None,
        }
        module.exit_json(changed=False, drafter=facts, problems=[])
    check = check_dflash_drafter(
        drafter,
        target,
        tokenizer_json=tokenizer,
        requested_block_size=params["requested_block_size"],
        target_layers_override=params["target_layers"],
    )
    if check.errors:
        module.fail_json(
            msg=f"drafter at {params['drafter_path']} does not fit the target: " + "; ".join(check.errors),
            problems=check.errors,
            drafter=check.facts,
        )
    for warning in check.warnings:
        module.warn(warning)
    module.exit_json(changed=False, drafter=check.facts, problems=[])


if __name__ == "__main__":
    main()
