#!/usr/bin/python
"""Ansible module: apply patch files to an installed venv idempotently, recording their checksums."""

from __future__ import annotations

import shutil
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.env.venv_patches import (
    Action,
    Probe,
    decide,
    load_state,
    patch_argv,
    save_state,
    sha256_file,
)

DOCUMENTATION = r"""
---
module: venv_patches
short_description: Apply patch files to a venv's site-packages once, recording each patch's sha256
description:
  - Applies each patch in order with GNU patch, in I(target) (a venv's site-packages).
  - Asks C(patch --dry-run) whether a patch is already in place, so a re-run changes nothing and a venv whose
    packages were reinstalled gets its patches back.
  - Records sha256 and a copy of every applied patch under I(state_dir); a patch whose content changed replaces
    the older version (reverse the old copy, apply the new one).
  - Fails, naming C(sglang_env_patches), when a patch neither applies nor is in place. Supports check mode.
version_added: "0.1.0"
author: specgate
options:
  patches:
    description:
      - Patches in the order they apply. The venv ends with exactly these; one applied by an earlier run that is not
        named here any more is reversed (from the copy the state keeps).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: Unique name the state records the patch under.
        type: str
        required: true
      path:
        description: Patch file on the host.
        type: path
        required: true
      strip:
        description: Leading path components to strip (patch -p).
        type: int
        default: 1
      src:
        description: Where the patch came from (recorded in the state file).
        type: str
        default: ""
      provides:
        description: What the patch adds to the release (e.g. ddtree); sglang_env's plan reads it, not this module.
        type: list
        elements: str
        default: []
  target:
    description: Directory the patch paths are relative to (after stripping).
    type: path
    required: true
  state_dir:
    description: Where the state file and copies of applied patches live.
    type: path
    required: true
  patch_bin:
    description: GNU patch to run.
    type: str
    default: patch
"""

EXAMPLES = r"""
- name: Apply the DDTree patch to the installed SGLang
  venv_patches:
    patches:
      - name: ddtree-pr-29907
        path: /opt/specgate/patches/ddtree.patch
        strip: 2
    target: /opt/specgate/venv/lib/python3.11/site-packages
    state_dir: /opt/specgate/venv/.specgate-patches
"""

RETURN = r"""
patches:
  description:
    - One entry per patch with name, sha256 and action (skip, record, apply, replace, conflict).
    - A patch the state records but O(patches) no longer names comes first, with action C(remove) (reversed from the
      copy kept when it was applied) or C(forget) (a reinstall already took it out).
  returned: always
  type: list
  elements: dict
"""

ARGUMENT_SPEC = {
    "patches": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {
            "name": {"type": "str", "required": True},
            "path": {"type": "path", "required": True},
            "strip": {"type": "int", "default": 1},
            "src": {"type": "str", "default": ""},
            "provides": {"type": "list", "elements": "str", "default": []},
        },
    },
    "target": {"type": "path", "required": True},
    "state_dir": {"type": "path", "required": True},
    "patch_bin": {"type": "str", "default": "patch"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    patch_bin = module.get_bin_path(p["patch_bin"], required=True)
    state_dir = Path(p["state_dir"])
    state = load_state(state_dir)
    results, changed = [], False

    def run(patch_file: Path | str, strip: int, *, reverse: bool, dry_run: bool) -> tuple[int, str]:
        rc, out, err = module.run_command(
            patch_argv(patch_bin, patch_file, p["target"], strip, reverse=reverse, dry_run=dry_run)
        )
        return rc, (out + err).strip()

    # The venv matches the declared patches: one no longer declared is reversed from the copy kept when it was
    # applied (or forgotten when a reinstall already took it out), before the declared ones are looked at.
    declared = {patch["name"] for patch in p["patches"]}
    for name in sorted(set(state["patches"]) - declared, reverse=True):
        recorded = state["patches"][name]
        copy = state_dir / "applied" / f"{name}.patch"
        strip = recorded.get("strip", 1)
        in_place = copy.exists() and run(copy, strip, reverse=True, dry_run=True)[0] == 0
        if not in_place and copy.exists() and run(copy, strip, reverse=False, dry_run=True)[0] != 0:
            module.fail_json(
                msg=f"sglang_env_patches: patch {name} was removed from sglang_env_patches, but its changes in "
                f"{p['target']} can neither be reversed nor are they gone. Fix: reinstall the venv (remove "
                f"{p['target']}'s sglang package or the venv), or put the patch back in sglang_env_patches.",
                patches=results,
            )
        action = "remove" if in_place else "forget"
        results.append({"name": name, "sha256": recorded.get("sha256", ""), "action": action})
        changed = True
        if module.check_mode:
            continue
        if in_place:
            rc, out = run(copy, strip, reverse=True, dry_run=False)
            if rc != 0:
                module.fail_json(msg=f"could not reverse the removed patch {name}: {out}", patches=results)
        copy.unlink(missing_ok=True)
        del state["patches"][name]
        save_state(state_dir, state)

    for patch in p["patches"]:
        name, path, strip = patch["name"], Path(patch["path"]), patch["strip"]
        sha = sha256_file(path)
        recorded = state["patches"].get(name, {}).get("sha256")
        old_copy = state_dir / "applied" / f"{name}.patch"
        forward_rc, forward_out = run(path, strip, reverse=False, dry_run=True)
        reverse_rc, _ = run(path, strip, reverse=True, dry_run=True)
        old_ok = bool(recorded and recorded != sha and old_copy.exists())
        if old_ok:
            old_ok = run(old_copy, state["patches"][name].get("strip", strip), reverse=True, dry_run=True)[0] == 0
        action = decide(recorded, sha, Probe(forward_rc == 0, reverse_rc == 0, old_ok))
        results.append({"name": name, "sha256": sha, "action": action.value})
        if action is Action.SKIP:
            continue
        if action is Action.CONFLICT:
            if module.check_mode:
                continue  # an earlier patch this one builds on is not applied in check mode
            module.fail_json(
                msg=f"sglang_env_patches: patch {name} ({path}) neither applies to {p['target']} nor is in place: "
                f"{forward_out} Fix: rebase the patch on the installed version, or correct its strip level.",
                patches=results,
            )
        changed = True
        if module.check_mode:
            continue
        if action is Action.REPLACE:
            rc, out = run(old_copy, state["patches"][name].get("strip", strip), reverse=True, dry_run=False)
            if rc != 0:
                module.fail_json(msg=f"could not reverse the older {name}: {out}", patches=results)
        if action in (Action.APPLY, Action.REPLACE):
            rc, out = run(path, strip, reverse=False, dry_run=False)
            if rc != 0:
                module.fail_json(msg=f"patch {name} failed after a clean dry run: {out}", patches=results)
        old_copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, old_copy)
        state["patches"][name] = {"sha256": sha, "strip": strip, "src": patch["src"]}
        save_state(state_dir, state)
    module.exit_json(changed=changed, patches=results)


if __name__ == "__main__":
    main()
