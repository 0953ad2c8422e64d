#!/usr/bin/python
"""Ansible module: where the CUDA toolkit goes and how the arch is spelled, refusing impossible requests."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.cuda.cuda_toolkit import as_dict, plan

DOCUMENTATION = r"""
---
module: cuda_plan
short_description: Plan a CUDA toolkit install for an SM arch (CUDA_HOME, nvcc -arch, FlashInfer/Torch arch list)
description:
  - Computes CUDA_HOME, the library directory, the nvcc arch flag (C(sm_120a)…) and the
    FLASHINFER_CUDA_ARCH_LIST/TORCH_CUDA_ARCH_LIST value for an arch, for the PyPI-wheel or the apt source.
  - Fails, naming the cuda_* variable and the fix, when the arch is unknown, the version is below the arch's
    minimum (SM90 12.0, SM100/SM120 12.8, SM103 12.9), the PyPI source is asked for CUDA 12 (no single tree),
    or the curand headers are missing from the package list.
  - Pure computation; changes nothing; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  arch:
    description: SM arch (sm90, sm100, sm103, sm120); empty when the host has none.
    type: str
  version:
    description: CUDA toolkit MAJOR.MINOR.
    type: str
    required: true
  source:
    description: Where the toolkit comes from.
    type: str
    choices: [pypi, apt]
    required: true
  prefix:
    description: Directory the PyPI toolkit lives under (its CUDA_HOME is C(prefix/home)).
    type: path
    required: true
  pypi_packages:
    description: Pinned PyPI CUDA wheels.
    type: list
    elements: str
    default: []
  apt_packages:
    description: CUDA apt packages.
    type: list
    elements: str
    default: []
  driver_cuda_version:
    description: CUDA version the host's driver supports (nvidia-smi); a toolkit of a newer major is refused.
    type: str
    default: ""
  driver_version:
    description: The driver's version, named in that refusal.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Plan the toolkit for the host's arch
  cuda_plan:
    arch: sm120
    version: "13.0"
    source: pypi
    prefix: /opt/specgate/cuda
    pypi_packages: [nvidia-cuda-nvcc==13.0.88, nvidia-curand==10.4.0.35]
  register: __cuda_toolkit_plan
"""

RETURN = r"""
plan:
  description: arch, version, source, nvcc_arch, arch_list, sm, home, lib_dir, pypi_subdir.
  returned: always
  type: dict
"""

ARGUMENT_SPEC = {
    "arch": {"type": "str"},
    "version": {"type": "str", "required": True},
    "source": {"type": "str", "choices": ["pypi", "apt"], "required": True},
    "prefix": {"type": "path", "required": True},
    "pypi_packages": {"type": "list", "elements": "str", "default": []},
    "apt_packages": {"type": "list", "elements": "str", "default": []},
    "driver_cuda_version": {"type": "str", "default": ""},
    "driver_version": {"type": "str", "default": ""},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    result = plan(
        p["arch"],
        p["version"],
        source=p["source"],
        prefix=p["prefix"],
        pypi_packages=p["pypi_packages"],
        apt_packages=p["apt_packages"],
        driver_cuda_version=p["driver_cuda_version"],
        driver_version=p["driver_version"],
    )
    if result.problems:
        module.fail_json(
            msg="cuda_toolkit refused the request; nothing on the host was changed:\n- " + "\n- ".join(result.problems),
            problems=result.problems,
        )
    module.exit_json(changed=False, plan=as_dict(result))


if __name__ == "__main__":
    main()
