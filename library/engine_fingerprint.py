#!/usr/bin/python
"""Ansible module: inventory what an engine process loads (a venv, its patches, env files) into a fingerprint."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.env.engine_fingerprint import inventory_engine

DOCUMENTATION = r"""
---
module: engine_fingerprint
short_description: Fingerprint what an engine process loads (a venv's installed set, its patches, env files)
description:
  - Asks I(python) (a venv's interpreter, run isolated with C(-I)) for every distribution it can import -
    name, version, a digest of the files its RECORD lists with hashes, and the commit or archive hash of a
    direct-URL install.
  - Reads the patches applied to the venv from venv_patches' state file in I(patch_state_dir).
  - Hashes those, the sha256 of each text in I(files) and the plain I(facts) into one C(fingerprint), so a
    change to any of them (a bumped pin, a dependency pip upgraded, a re-applied patch, a new CUDA env file)
    changes it, and nothing else does. The release id of sglang_service includes it.
  - Only reads. Where I(python) does not exist yet (check mode on a bare host) it reports C(present=false)
    and fingerprints an empty set; outside check mode a missing interpreter is an error.
    Supports check mode.
version_added: "0.1.0"
author: specgate
options:
  python:
    description: Interpreter of the venv to inventory; "" inventories no venv (only I(files) and I(facts)).
    type: str
    default: ""
  patch_state_dir:
    description: venv_patches' state directory ("" or absent = no patches applied).
    type: str
    default: ""
  names:
    description: Requested names whose installed versions are returned in C(versions) as spelled here.
    type: list
    elements: str
    default: []
  files:
    description: Texts the engine loads, by name (e.g. the CUDA env file as rendered); only their sha256 is kept.
    type: dict
    default: {}
  facts:
    description: Plain values that belong to the fingerprint (e.g. the CUDA toolkit version).
    type: dict
    default: {}
  pending:
    description: >-
      An install or patch is still to come (check mode saw one): the venv on disk is not what a real run
      leaves, so the fingerprint is marked and differs from any installed one.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Fingerprint the SGLang venv with its patches
  engine_fingerprint:
    python: /opt/specgate/venv/bin/python
    patch_state_dir: /opt/specgate/venv/.specgate-patches
    names: [sglang, flashinfer-python, sglang-kernel]
  register: __sglang_env_fingerprint

- name: Fingerprint the CUDA toolkit's wheels, version and env file
  engine_fingerprint:
    python: /opt/specgate/cuda/venv/bin/python
    files:
      cuda.env: "{{ lookup('ansible.builtin.template', 'cuda.env.j2') }}"
    facts:
      version: "13.0"
"""

RETURN = r"""
present:
  description: Whether I(python) exists (always true when no python was given).
  returned: always
  type: bool
fingerprint:
  description: 16 hex digits over everything below (and the per-file digests of each distribution).
  returned: always
  type: str
  sample: 3f0a9c1d2e4b5a67
installed:
  description: Every distribution in the venv, name to version.
  returned: always
  type: dict
versions:
  description: The requested I(names) to their installed version (null where not installed); {} when not present.
  returned: always
  type: dict
patches:
  description: Applied patches, name to sha256.
  returned: always
  type: dict
files:
  description: I(files) name to sha256.
  returned: always
  type: dict
"""

ARGUMENT_SPEC = {
    "python": {"type": "str", "default": ""},
    "patch_state_dir": {"type": "str", "default": ""},
    "names": {"type": "list", "elements": "str", "default": []},
    "files": {"type": "dict", "default": {}},
    "facts": {"type": "dict", "default": {}},
    "pending": {"type": "bool", "default": False},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if p["python"] and not os.path.exists(p["python"]) and not module.check_mode:
        module.fail_json(msg=f"{p['python']} does not exist: the venv to fingerprint was not installed")
    try:
        result = inventory_engine(
            module.run_command,
            p["python"],
            **{key: p[key] for key in ("patch_state_dir", "names", "files", "facts", "pending")},
        )
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
