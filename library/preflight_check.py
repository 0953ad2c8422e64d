#!/usr/bin/python
"""Ansible module: refuse a deployment that cannot work on this host, naming the variable and the fix."""

from __future__ import annotations

from dataclasses import fields

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.deployment_checks import (
    Deployment,
    check_deployment,
    failure_message,
    in_users_words,
    problems_as_dicts,
)

DOCUMENTATION = r"""
---
module: preflight_check
short_description: Check a requested SGLang deployment as a whole against the host's GPUs, CUDA, disk and OS
description:
  - Checks what per-variable validation cannot - parallel sizes against the GPU count, DFLASH/DDTREE against
    pipeline parallelism, attention backends against the SM arch (fa3 only SM90, trtllm_mla/trtllm_mha only
    SM100/SM103), the CUDA toolkit against the arch minimum (SM90 12.0, SM100/SM120 12.8, SM103 12.9), the
    SGLang release against its CUDA lane (0.5.20 and later need CUDA 13), the driver against the toolkit,
    free disk, RAM and OS.
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
  assume_arch:
    description: SM arch a GPU-less host stands in for (checks CUDA and backends against it); ignored with GPUs.
    type: str
    choices: [sm90, sm100, sm103, sm120]
  tp_size:
    description: Tensor parallel size.
    type: int
    default: 1
  pp_size:
    description: Pipeline parallel size.
    type: int
    default: 1
  ep_size:
    description: Expert parallel size.
    type: int
    default: 1
  dp_size:
    description: Data parallel replicas.
    type: int
    default: 1
  attn_dp_size:
    description: Attention data parallel size.
    type: int
    default: 1
  nnodes:
    description: Nodes the deployment spans.
    type: int
    default: 1
  attention_backend:
    description: Target attention backend (empty for SGLang's default).
    type: str
  draft_attention_backend:
    description: Draft attention backend (empty for SGLang's default).
    type: str
  sglang_version:
    description: SGLang release the venv pins.
    type: str
    default: "0.5.23"
  cuda_version:
    description: CUDA toolkit MAJOR.MINOR that will be installed.
    type: str
    default: "13.0"
  min_free_gib:
    description: Minimum free GiB per path, for paths M(gpu_facts) measured.
    type: dict
    default: {}
  min_ram_gib:
    description: Minimum RAM in GiB (0 to skip).
    type: float
    default: 0
  var_sources:
    description:
      - Maps a preflight_* variable to the inventory variable the playbook set it from
        (C(preflight_tp_size) to C(sglang_service_tp_size)); problems then name the inventory variable.
    type: dict
    default: {}
  supported_os:
    description: Accepted ID+VERSION_ID of /etc/os-release (C(debian12), C(ubuntu24.04)); empty accepts any.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Refuse a deployment the GPUs cannot run
  preflight_check:
    gpu: "{{ __preflight_gpu_facts.specgate_gpu }}"
    host: "{{ __preflight_gpu_facts.host }}"
    tp_size: 8
    attention_backend: triton
    cuda_version: "13.0"
"""

RETURN = r"""
problems:
  description: Every problem found, each with variable, message and fix; empty when the deployment can go ahead.
  returned: always
  type: list
  elements: dict
"""

ARGUMENT_SPEC = {
    "gpu": {"type": "dict", "required": True},
    "host": {"type": "dict", "required": True},
    "expect_gpus": {"type": "bool", "default": True},
    "assume_arch": {"type": "str", "choices": ["sm90", "sm100", "sm103", "sm120"]},
    "tp_size": {"type": "int", "default": 1},
    "pp_size": {"type": "int", "default": 1},
    "ep_size": {"type": "int", "default": 1},
    "dp_size": {"type": "int", "default": 1},
    "attn_dp_size": {"type": "int", "default": 1},
    "nnodes": {"type": "int", "default": 1},
    "attention_backend": {"type": "str"},
    "draft_attention_backend": {"type": "str"},
    "sglang_version": {"type": "str", "default": "0.5.23"},
    "cuda_version": {"type": "str", "default": "13.0"},
    "min_free_gib": {"type": "dict", "default": {}},
    "min_ram_gib": {"type": "float", "default": 0},
    "supported_os": {"type": "list", "elements": "str", "default": []},
    "var_sources": {"type": "dict", "default": {}},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    deployment = Deployment(**{f.name: params[f.name] for f in fields(Deployment) if params[f.name] is not None})
    deployment.min_free_gib = {path: float(gib) for path, gib in params["min_free_gib"].items()}
    problems = in_users_words(
        check_deployment(deployment, params["gpu"], params["host"], params["assume_arch"]), params["var_sources"]
    )
    if problems:
        module.fail_json(msg=failure_message(problems), problems=problems_as_dicts(problems))
    module.exit_json(changed=False, problems=[])


if __name__ == "__main__":
    main()
