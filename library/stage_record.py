#!/usr/bin/python
"""Ansible module: tell whether a provisioning stage is where its last full run left it, or record that it is."""

from __future__ import annotations

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.common.stage_record import (
    account_differences,
    content_digest,
    dpkg_query_argv,
    input_parts,
    inputs_digest,
    observe,
    package_differences,
    path_differences,
    record_differences,
    record_text,
)
from ansible.module_utils.specgate.env.engine_fingerprint import inventory_engine

DOCUMENTATION = r"""
---
module: stage_record
short_description: Tell whether a provisioning stage has nothing to do, in one host call; record a full run
description:
  - A no-op re-run is the common case, and each task of a stage is a host round trip. A full run of a stage ends
    with I(state=present), which writes I(record) - a digest of I(inputs) and I(installed_fingerprint), the
    fingerprint the run already took of what it left (the venv is not read a second time).
  - With I(state=check) the module reads the record and the real state at once - the engine fingerprint
    (as engine_fingerprint computes it from I(fingerprint)), every path in I(paths) (kind, owner, group, mode,
    content), the accounts in I(users) and I(groups), the dpkg I(packages) - and returns C(converged=true) only when
    the inputs and the fingerprint are those of the record and nothing differs. C(differences) says why not.
  - The record only says which inputs made the state; the state itself is read every time, so a hand edit, a
    removed package or a changed mode sends the stage down its full path, which repairs it.
  - Supports check mode (I(state=present) reports the change and writes nothing).
version_added: "0.1.0"
author: specgate
options:
  record:
    description: The record's path on the host (written by I(state=present), root-owned, mode 0644).
    type: path
    required: true
  state:
    description: C(check) reads and compares; C(present) writes the record of a full run.
    type: str
    choices: [check, present]
    default: check
  inputs:
    description: Everything the stage was asked to do (its variables, plan, task files' digest, wheel names).
    type: raw
    required: true
  fingerprint:
    description: >-
      With I(state=check), engine_fingerprint's options (python, patch_state_dir, names, files, facts) for what the
      stage installs; its result is returned, so the stage needs no separate fingerprint call when it has nothing
      to do.
    type: dict
    default: {}
  installed_fingerprint:
    description: With I(state=present), the fingerprint engine_fingerprint took of what the full run left.
    type: str
    default: ""
  paths:
    description: >-
      Paths the stage leaves - C(path), C(state) (file, directory or link), C(owner), C(group), C(mode) and for a
      file the C(content) it writes (compared by sha256), or only that C(sha256) where the content is a secret.
    type: list
    elements: dict
    default: []
  users:
    description: Accounts the stage creates - C(name), C(group), C(shell), C(home).
    type: list
    elements: dict
    default: []
  groups:
    description: Groups the stage creates.
    type: list
    elements: str
    default: []
  packages:
    description: dpkg packages the stage installs (a C(name=version) pin is judged by its name).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Ask whether the toolkit is as the last full run of these inputs left it
  stage_record:
    record: /opt/specgate/cuda/.specgate-stage.json
    inputs: "{{ {'vars': cuda_toolkit_vars, 'plan': plan} }}"
    fingerprint:
      python: /opt/specgate/cuda/venv/bin/python
      files:
        env_file: "{{ lookup('ansible.builtin.template', 'cuda.env.j2') }}"
    paths:
      - {path: /etc/specgate/cuda.env, state: file, owner: root, group: root, mode: "0644", content: "..."}
    packages: [g++, python3-venv]
  register: __cuda_toolkit_stage

- name: Record the full run
  stage_record:
    record: /opt/specgate/cuda/.specgate-stage.json
    state: present
    inputs: "{{ {'vars': cuda_toolkit_vars, 'plan': plan} }}"
    installed_fingerprint: "{{ __cuda_toolkit_fingerprint.fingerprint }}"
"""

RETURN = r"""
converged:
  description: The record vouches for these inputs and the host holds what it recorded (check); the record was
    already up to date (present).
  returned: always
  type: bool
differences:
  description: Why the stage is not converged, one line each (empty when it is).
  returned: always
  type: list
  elements: str
  sample: ["/etc/specgate/cuda.env differs from what the stage writes"]
present:
  description: Whether the fingerprinted interpreter exists (engine_fingerprint's field).
  returned: when state is check
  type: bool
fingerprint:
  description: engine_fingerprint's fingerprint of the installed state (with I(state=present), the one recorded).
  returned: always
  type: str
installed:
  description: engine_fingerprint's installed distributions.
  returned: when state is check
  type: dict
versions:
  description: engine_fingerprint's requested versions.
  returned: when state is check
  type: dict
patches:
  description: engine_fingerprint's applied patches.
  returned: when state is check
  type: dict
"""

ARGUMENT_SPEC = {
    "record": {"type": "path", "required": True},
    "state": {"type": "str", "choices": ["check", "present"], "default": "check"},
    "inputs": {"type": "raw", "required": True},
    "fingerprint": {"type": "dict", "default": {}},
    "installed_fingerprint": {"type": "str", "default": ""},
    "paths": {"type": "list", "elements": "dict", "default": []},
    "users": {"type": "list", "elements": "dict", "default": []},
    "groups": {"type": "list", "elements": "str", "default": []},
    "packages": {"type": "list", "elements": "str", "default": []},
}


def read_record(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def state_differences(module: AnsibleModule) -> list[str]:
    p = module.params
    found = []
    for expected in p["paths"]:
        found += path_differences(expected, observe(expected["path"], content_digest(expected) is not None))
    found += account_differences(p["users"], p["groups"])
    packages = [name.split("=")[0] for name in p["packages"]]
    if packages:
        _, out, _ = module.run_command(dpkg_query_argv(packages))  # rc 1 for an unknown name: judged per line
        found += package_differences(packages, out)
    return found


def write_record(module: AnsibleModule, path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".stage-record.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(temp, 0o644)
    module.atomic_move(temp, path)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           required_if=[("state", "present", ["installed_fingerprint"])])  # fmt: skip
    p = module.params
    digest = inputs_digest(p["inputs"])
    parts = input_parts(p["inputs"])
    recorded = read_record(p["record"])
    if p["state"] == "present":
        text = record_text(digest, p["installed_fingerprint"], parts)
        changed = recorded != text
        if changed and not module.check_mode:
            write_record(module, p["record"], text)
        module.exit_json(changed=changed, converged=not changed, differences=[], fingerprint=p["installed_fingerprint"])
    options = {key: p["fingerprint"][key] for key in ("patch_state_dir", "names", "files", "facts")
               if p["fingerprint"].get(key) is not None}  # fmt: skip
    try:
        engine = inventory_engine(module.run_command, p["fingerprint"].get("python") or "", **options)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    python = p["fingerprint"].get("python") or ""
    differences = [f"{python} is missing"] if not engine["present"] else []
    differences += record_differences(recorded, digest, engine["fingerprint"], parts) + state_differences(module)
    module.exit_json(changed=False, converged=not differences, differences=differences, **engine)


if __name__ == "__main__":
    main()
