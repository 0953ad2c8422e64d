#!/usr/bin/python
"""Ansible module: GPU, disk, memory and OS facts of a host, read-only."""

from __future__ import annotations

from dataclasses import asdict

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.preflight.gpu_facts import (
    QUERY_ARGS,
    GpuParseError,
    build_fact,
    no_devices,
    parse_cuda_driver_version,
    parse_query,
    parse_topology,
)
from ansible.module_utils.specgate.preflight.host_facts import gather

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: NVIDIA GPU facts (count, SM arch, memory, NVLink or PCIe, driver) plus disk, RAM and OS
description:
  - Runs C(nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version
    --format=csv,noheader,nounits), C(nvidia-smi topo -m) and plain C(nvidia-smi), and returns the
    C(specgate_gpu) fact as CONTRIBUTING.md defines it.
  - Maps compute capability to the SM arch specgate deploys on (9.0 sm90, 10.0 sm100, 10.3 sm103, 12.0 sm120).
  - A host where nvidia-smi is missing or finds no device gets C(has_gpus=false), not a failure; the
    preflight role decides whether that is acceptable.
  - Reads only; never changes the host. Supports check mode.
version_added: "0.1.0"
author: specgate
options:
  nvidia_smi:
    description: nvidia-smi to run, a name on PATH or an absolute path.
    type: str
    default: nvidia-smi
  paths:
    description:
      - Paths whose filesystem free space is reported (the nearest existing parent is measured when the
        path does not exist yet).
    type: list
    elements: str
    default: []
notes:
  - Interconnect is C(nvlink) when any GPU pair is joined by NVLink (C(NV#) in the topology matrix),
    C(pcie) otherwise, and null for a single GPU.
"""

EXAMPLES = r"""
- name: Read the GPUs and the disks that will hold the venv and the weights
  gpu_facts:
    paths: [/opt/specgate, /models]
  register: __preflight_gpu_facts
"""

RETURN = r"""
specgate_gpu:
  description: count, names, arch, compute_capability, memory_total_mib (smallest GPU), interconnect,
    driver_version, cuda_driver_version, has_gpus.
  returned: always
  type: dict
gpus:
  description: One entry per GPU with index, name, uuid, pci_bus_id, compute_capability, memory_total_mib,
    memory_used_mib, driver_version.
  returned: always
  type: list
  elements: dict
topology_links:
  description: Count of GPU-to-GPU links by kind (C(NV#), C(PIX), C(PXB), C(PHB), C(NODE), C(SYS)).
  returned: always
  type: dict
host:
  description: mem_total_mib, disk (path, measured_at, free_mib, total_mib), os_id, os_version_id, os_pretty_name.
  returned: always
  type: dict
no_gpu_reason:
  description: Why the host counts as GPU-less (binary missing, no device, driver not loaded); empty with GPUs.
  returned: always
  type: str
"""

# nvidia-smi's documented exit code for "NVIDIA driver is not loaded": a host without usable GPUs, not an error.
NVIDIA_SMI_DRIVER_NOT_LOADED = 9

ARGUMENT_SPEC = {
    "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
    "paths": {"type": "list", "elements": "str", "default": []},
}


def read_gpus(module: AnsibleModule) -> dict:
    binary = module.get_bin_path(module.params["nvidia_smi"])
    if binary is None:
        return {"gpus": [], "topology": None, "cuda": None, "reason": f"{module.params['nvidia_smi']} not found"}
    rc, out, err = module.run_command([binary, *QUERY_ARGS])
    if rc != 0 or no_devices(out):
        if no_devices(out + err) or rc == NVIDIA_SMI_DRIVER_NOT_LOADED:
            return {"gpus": [], "topology": None, "cuda": None, "reason": (out + err).strip()}
        module.fail_json(msg=f"{binary} --query-gpu failed (rc {rc}): {(out + err).strip()}")
    gpus = parse_query(out)
    if not gpus:
        return {"gpus": [], "topology": None, "cuda": None, "reason": "nvidia-smi listed no GPU"}
    rc, topo_out, err = module.run_command([binary, "topo", "-m"])
    if rc != 0:
        module.fail_json(msg=f"{binary} topo -m failed (rc {rc}): {(topo_out + err).strip()}")
    rc, plain_out, err = module.run_command([binary])
    if rc != 0:
        module.fail_json(msg=f"{binary} failed (rc {rc}): {(plain_out + err).strip()}")
    return {
        "gpus": gpus,
        "topology": parse_topology(topo_out),
        "cuda": parse_cuda_driver_version(plain_out),
        "reason": "",
    }


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        found = read_gpus(module)
    except GpuParseError as exc:
        module.fail_json(msg=f"could not parse nvidia-smi output: {exc}")
    topology = found["topology"]
    module.exit_json(
        changed=False,
        specgate_gpu=build_fact(found["gpus"], topology, found["cuda"]),
        gpus=[asdict(gpu) for gpu in found["gpus"]],
        topology_links=topology.links if topology else {},
        host=gather(module.params["paths"]),
        no_gpu_reason=found["reason"],
    )


if __name__ == "__main__":
    main()
