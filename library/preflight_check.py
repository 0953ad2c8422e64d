#!/usr/bin/python
"""Ansible module: refuse a deployment that cannot work on this host, naming the variable and the fix."""

from __future__ import annotations

from dataclasses import fields

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.preflight.deployment_checks import (
    Deployment,
    check_deployment,
    failure_message,
    problems_as_dicts,
)

DOCUMENTATION = r"""
---
module: preflight_check
short_description: Refuse a host without the GPUs, disk, RAM or OS a deployment needs
description:
  - Checks the host itself - NVIDIA GPUs present where expected, of one model and a supported arch (SM90,
    SM100, SM103, SM120), free disk on each given path, RAM, OS.
  - How the later stages' settings fit the host (parallel sizes, attention backends, CUDA against the arch and
    the driver, the SGLang release against its CUDA lane) is each stage's own check, in its validate entry point.
  - Fails listing every problem, each naming the variable to change and how. Reads only; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  gpu:
    description: The C(specgate_gpu) fact from M(gpu_facts).
    type: dict
    required: true
  host:
    description: The C(host) result of M(gpu_facts) (mem_total_mib, disk, os_id, os_version_id).
    type: dict
    required: true
  expect_gpus:
    description: Whether the host must have NVIDIA GPUs; false only for demo and test hosts.
    type: bool
    default: true
  min_free_gib:
    description: Free GiB required on the filesystem of each path (the paths M(gpu_facts) measured).
    type: dict
    default: {}
  min_ram_gib:
    description: RAM in GiB the host must have (0 skips the check).
    type: float
    default: 0
  supported_os:
    description: Accepted ID+VERSION_ID of /etc/os-release (C(debian12), C(ubuntu24.04)); empty accepts any.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Refuse a host without GPUs or disk
  preflight_check:
    gpu: "{{ __preflight_gpu_facts.specgate_gpu }}"
    host: "{{ __preflight_gpu_facts.host }}"
    min_free_gib:
      /opt/specgate: 25
"""

RETURN = r"""
problems:
  description: Every problem found, each with variable, message and fix; empty when the host can go ahead.
  returned: always
  type: list
  elements: dict
"""

ARGUMENT_SPEC = {
    "gpu": {"type": "dict", "required": True},
    "host": {"type": "dict", "required": True},
    "expect_gpus": {"type": "bool", "default": True},
    "min_free_gib": {"type": "dict", "default": {}},
    "min_ram_gib": {"type": "float", "default": 0},
    "supported_os": {"type": "list", "elements": "str", "default": []},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    deployment = Deployment(**{f.name: params[f.name] for f in fields(Deployment) if params[f.name] is not None})
    deployment.min_free_gib = {path: float(gib) for path, gib in params["min_free_gib"].items()}
    problems = check_deployment(deployment, params["gpu"], params["host"])
    if problems:
        module.fail_json(msg=failure_message(problems), problems=problems_as_dicts(problems))
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
