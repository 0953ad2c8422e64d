#!/usr/bin/python
"""Ansible module: plan the SGLang venv's requirements and pip source, refusing unreproducible requests."""

from __future__ import annotations

from dataclasses import asdict

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.env.sglang_env_plan import plan_env

DOCUMENTATION = r"""
---
module: sglang_env_plan
short_description: Plan what the SGLang venv installs and from where (index, wheelhouse or git commit)
description:
  - Builds the requirement list (base packages first, then the pinned SGLang stack), the pip arguments for
    the source, the git requirement for a commit of SGLang, the names whose versions are recorded, the
    patch list, and what the engine will be (its SGLang release and the features its patches or git source add).
  - Fails, naming the sglang_env_* variable and the fix, on unpinned stack packages, a wheelhouse source
    without a wheelhouse, a git source without a URL or a full commit, sglang asked for twice, malformed
    patch entries, an SGLang release specgate does not render for, or a CUDA toolkit of another lane.
    Pure computation on the controller only (the role delegates it to localhost), where package lines are read as pip
    reads them, with packaging.requirements, which ansible-core brings. Supports check mode.
version_added: "0.1.0"
author: specgate
options:
  source:
    description: Where packages come from.
    type: str
    choices: [index, wheelhouse, git]
    required: true
  packages:
    description: The pinned SGLang stack (name==version each).
    type: list
    elements: str
    default: []
  base_packages:
    description: Packages every venv gets (e.g. huggingface_hub for the weights stage); ranges allowed.
    type: list
    elements: str
    default: []
  wheelhouse_dir:
    description: Wheelhouse directory on the host (for the wheelhouse source).
    type: str
    default: ""
  index_url:
    description: Package index ("" = pip's configured index).
    type: str
    default: ""
  git_url:
    description: SGLang repository (git source).
    type: str
    default: ""
  git_ref:
    description: Full commit to install (git source).
    type: str
    default: ""
  git_subdirectory:
    description: Directory of the Python package inside the repository.
    type: str
    default: python
  patches:
    description: Patch entries (src, strip, optional name).
    type: list
    elements: dict
    default: []
  patch_dir:
    description: Directory on the host the patch files are copied to.
    type: str
    default: ""
  sglang_version:
    description: The SGLang release the engine is when no sglang==X.Y.Z pin says so (a git source, a stand-in).
    type: str
    default: ""
  git_provides:
    description: Features the git source's commit adds to its release (e.g. ddtree).
    type: list
    elements: str
    default: []
  cuda_version:
    description: The CUDA toolkit the engine runs on ("" skips the CUDA lane check).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Plan an air-gapped install
  sglang_env_plan:
    source: wheelhouse
    packages: [sglang==0.5.23, flashinfer-python==0.7.2, sglang-kernel==0.4.10]
    base_packages: [huggingface_hub>=1.0,<3]
    wheelhouse_dir: /opt/specgate/wheelhouse
  register: __sglang_env_plan
"""

RETURN = r"""
plan:
  description: >-
    requirements, git_requirement, pip_args, version_names, patches (name, src, strip, path on the host,
    provides), and engine (sglang_version, features, renders_for, source, version_variable): what the engine
    will be able to do.
  returned: always
  type: dict
"""

ARGUMENT_SPEC = {
    "source": {"type": "str", "choices": ["index", "wheelhouse", "git"], "required": True},
    "packages": {"type": "list", "elements": "str", "default": []},
    "base_packages": {"type": "list", "elements": "str", "default": []},
    "wheelhouse_dir": {"type": "str", "default": ""},
    "index_url": {"type": "str", "default": ""},
    "git_url": {"type": "str", "default": ""},
    "git_ref": {"type": "str", "default": ""},
    "git_subdirectory": {"type": "str", "default": "python"},
    "patches": {"type": "list", "elements": "dict", "default": []},
    "patch_dir": {"type": "str", "default": ""},
    "sglang_version": {"type": "str", "default": ""},
    "git_provides": {"type": "list", "elements": "str", "default": []},
    "cuda_version": {"type": "str", "default": ""},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    result = plan_env(**module.params)
    if result.problems:
        module.fail_json(
            msg="sglang_env refused the request; nothing on the host was changed:\n- " + "\n- ".join(result.problems),
            problems=result.problems,
        )
    plan = asdict(result)
    del plan["problems"]
    module.exit_json(changed=False, plan=plan)


if __name__ == "__main__":
    main()
