#!/usr/bin/python
"""Ansible module: prove a CUDA toolkit by compiling a curand probe for the host's arch."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.cuda.cuda_toolkit import cubin_sm, nvcc_release

DOCUMENTATION = r"""
---
module: cuda_probe
short_description: Compile a CUDA probe for an arch with nvcc and check the cubin's SM
description:
  - Checks that C(nvcc --version) reports the expected CUDA release, compiles I(source) to a cubin for
    I(nvcc_arch) (no GPU needed) and reads the SM number back from the cubin's ELF header.
  - Compiles only when the cubin is missing, older than the source, or built for another SM, so a second run
    changes nothing. In check mode reports whether it would compile.
version_added: "0.1.0"
author: specgate
options:
  nvcc:
    description: Path of nvcc.
    type: path
    required: true
  source:
    description: The probe .cu file.
    type: path
    required: true
  output:
    description: Cubin to write.
    type: path
    required: true
  nvcc_arch:
    description: nvcc -arch value, e.g. C(sm_120a).
    type: str
    required: true
  sm:
    description: SM number the cubin must carry (120 for sm_120a).
    type: int
    required: true
  expected_version:
    description: CUDA MAJOR.MINOR nvcc must report.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Compile the curand probe for SM120
  cuda_probe:
    nvcc: /opt/specgate/cuda/home/bin/nvcc
    source: /opt/specgate/cuda/probe/probe.cu
    output: /opt/specgate/cuda/probe/probe-sm_120a.cubin
    nvcc_arch: sm_120a
    sm: 120
    expected_version: "13.0"
"""

RETURN = r"""
nvcc_version:
  description: CUDA release nvcc reported.
  returned: success
  type: str
cubin_sm:
  description: SM number read from the cubin.
  returned: success
  type: int
compiled:
  description: Whether this run compiled the probe.
  returned: success
  type: bool
"""

ARGUMENT_SPEC = {
    "nvcc": {"type": "path", "required": True},
    "source": {"type": "path", "required": True},
    "output": {"type": "path", "required": True},
    "nvcc_arch": {"type": "str", "required": True},
    "sm": {"type": "int", "required": True},
    "expected_version": {"type": "str", "required": True},
}


def read_sm(path: str) -> int | None:
    try:
        with open(path, "rb") as handle:
            return cubin_sm(handle.read(64))
    except OSError:
        return None


def up_to_date(source: str, output: str, sm: int) -> bool:
    return os.path.exists(output) and os.path.getmtime(output) >= os.path.getmtime(source) and read_sm(output) == sm


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    rc, out, err = module.run_command([p["nvcc"], "--version"])
    if rc != 0:
        module.fail_json(msg=f"{p['nvcc']} --version failed (rc {rc}): {(out + err).strip()}")
    release = nvcc_release(out)
    if release != p["expected_version"]:
        module.fail_json(
            msg=f"{p['nvcc']} is CUDA {release}, but cuda_toolkit_version is {p['expected_version']}. Fix: pin "
            "the toolkit packages (cuda_toolkit_pypi_packages / cuda_toolkit_apt_packages) to the "
            "cuda_toolkit_version release."
        )
    if up_to_date(p["source"], p["output"], p["sm"]):
        module.exit_json(changed=False, compiled=False, nvcc_version=release, cubin_sm=p["sm"])
    if module.check_mode:
        module.exit_json(changed=True, compiled=False, nvcc_version=release, cubin_sm=None)
    rc, out, err = module.run_command([p["nvcc"], f"-arch={p['nvcc_arch']}", "-cubin", "-o", p["output"], p["source"]])
    if rc != 0:
        module.fail_json(
            msg=f"nvcc could not compile the probe for {p['nvcc_arch']} (rc {rc}): {(out + err).strip()} "
            "Fix: install the curand headers and a host g++ the toolkit supports.",
            nvcc_version=release,
        )
    sm = read_sm(p["output"])
    if sm != p["sm"]:
        module.fail_json(msg=f"the probe cubin is for SM {sm}, expected SM {p['sm']} ({p['nvcc_arch']}).")
    module.exit_json(changed=True, compiled=True, nvcc_version=release, cubin_sm=sm)


if __name__ == "__main__":
    main()
