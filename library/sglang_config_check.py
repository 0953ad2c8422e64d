#!/usr/bin/python
"""Ansible module: ask the host's SGLang whether a rendered --config would start (logic in sglang_resolve)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.sglang_resolve import (
    DEFAULT_SERVER_ARGS_MODULE,
    DEFAULT_TIMEOUT_S,
    ResolverUnavailable,
    check_config,
    check_configs,
    mask_environment,
)

DOCUMENTATION = r"""
---
module: sglang_config_check
short_description: Check an SGLang server config with SGLang's own parser, resolver and launcher checks on the host
description:
  - Runs the engine venv's Python on a small driver that imports the server-args module, calls
    C(prepare_server_args(["--config", config, *extra_argv])) and the version's resolution
    (C(resolve_once()) where it exists), then the launcher's own checks in the launcher's order, as
    C(sglang serve) runs them before any process loads weights - C(load_plugins), C(check_server_args()),
    C(resolve_auto_parsers) for an C(auto) parser, the target and draft model configs, and for DFLASH the strict
    draft-config parse that resolution only warns about.
  - A server-args module that is not SGLang's (the simulator) runs only the C(check_server_args) it defines.
  - Every top-level key of the config must be an exact option string of that version's parser; argparse's
    abbreviation matching would otherwise accept a prefix silently.
  - Read-only, so it runs in check mode too. Fails the task with SGLang's own message when the config is
    rejected, and with the interpreter's error when the resolver cannot run at all.
  - The resolver never reaches the network (C(HF_HUB_OFFLINE=1)); model and drafter paths must be local
    directories holding a C(config.json).
version_added: "0.1.0"
author: specgate
options:
  python:
    description: The engine venv's Python interpreter on the host.
    type: path
    required: true
  config:
    description:
      - The rendered server config on the host (YAML, keys are SGLang flag names with dashes).
      - Exactly one of I(config) and I(content) is required.
    type: path
  content:
    description:
      - The rendered server config itself. The module writes it to a private temporary file on the host,
        checks it and removes it, so a candidate is checked before anything of it is written to the host.
    type: str
  configs:
    description:
      - Several rendered configs checked in one run of the resolver (SGLang imported once), each
        C({name, content, environment}); a sweep judges all its points this way before its first launch.
      - A rejected config is an answer, not a failure - see I(results); the task fails only when the resolver
        cannot run. Exactly one of I(config), I(content) and I(configs) is required.
    type: list
    elements: dict
  environment:
    description:
      - Engine environment the resolver runs with (for example the DDTree knobs).
      - Values of variables whose names contain KEY, TOKEN, SECRET or PASSWORD are masked in the result;
        the resolver needs no secret, so leave them out.
    type: dict
    default: {}
  server_args_module:
    description:
      - Module providing C(prepare_server_args) and C(ServerArgs.add_cli_args).
      - The demo points this at C(specgate_sim.server_args).
    type: str
    default: sglang.srt.server_args
  extra_argv:
    description:
      - Arguments appended after C(--config) (command-line values win over the config file).
      - Real hosts pass nothing; GPU-less tests pass C(--device cuda).
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds to wait for the resolver (importing SGLang alone takes several seconds).
    type: int
    default: 300
notes:
  - Supports check mode; never changes the host.
"""

EXAMPLES = r"""
- name: Check the candidate release's config with the host's SGLang
  sglang_config_check:
    python: /opt/specgate/venv/bin/python
    config: /opt/specgate/releases/3f2a9c1d-bs8-b8-t4/server.yaml
    environment:
      SGLANG_DDTREE_MAX_TOPK: "4"
  register: __sglang_service_check

- name: Check a candidate before any of it is written to the host
  sglang_config_check:
    python: /opt/specgate/venv/bin/python
    content: "{{ candidate_config | to_nice_yaml }}"

- name: Judge every point of a sweep at once, before the first launch
  sglang_config_check:
    python: /opt/specgate/venv/bin/python
    configs:
      - {name: bs8-b4-t4, content: "{{ point_a_config | to_nice_yaml }}", environment: {}}
      - {name: bs16-b32-t8, content: "{{ point_b_config | to_nice_yaml }}", environment: {}}
  register: __sweep_sglang_check

- name: The demo host checks against the simulated server's resolver
  sglang_config_check:
    python: /opt/specgate/venv/bin/python
    config: /opt/specgate/releases/3f2a9c1d-bs8-b8-t4/server.yaml
    server_args_module: specgate_sim.server_args
"""

RETURN = r"""
rejected:
  description: Whether SGLang's resolver refused the config.
  returned: always
  type: bool
  sample: false
message:
  description: SGLang's own error message when rejected, else a short confirmation.
  returned: always
  type: str
  sample: "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1."
resolved:
  description: The server arguments as SGLang resolved them (field names with underscores; secrets masked).
  returned: when accepted
  type: dict
  sample: {"speculative_algorithm": "DFLASH", "speculative_num_draft_tokens": 8, "tp_size": 8}
stage:
  description: Where SGLang refused the config - C(parse), C(resolve) or C(launcher:<check>); null when accepted.
  returned: always
  type: str
  sample: "launcher:check_server_args"
launcher_checks:
  description: The launcher's checks that ran, in the launcher's order.
  returned: always
  type: list
  elements: str
  sample: ["load_plugins", "check_server_args", "model_config", "draft_model_config", "dflash_draft_config"]
unknown_keys:
  description: Config keys that are not exact option strings of the version's parser.
  returned: always
  type: list
  elements: str
  sample: []
results:
  description: With I(configs), per config in order - C({name, rejected, message, stage, launcher_checks,
    unknown_keys}); the other return values then describe nothing.
  returned: with configs
  type: list
  elements: dict
  sample: [{"name": "bs8-b4-t4", "rejected": true, "message": "ValueError: ...", "stage": "resolve"}]
environment:
  description: The environment the resolver ran with, secret-looking values masked.
  returned: always
  type: dict
  sample: {"SGLANG_DDTREE_MAX_TOPK": "4"}
"""

ARGUMENT_SPEC = {
    "python": {"type": "path", "required": True},
    "config": {"type": "path"},
    "content": {"type": "str"},
    "configs": {"type": "list", "elements": "dict"},
    "environment": {"type": "dict", "default": {}},
    "server_args_module": {"type": "str", "default": DEFAULT_SERVER_ARGS_MODULE},
    "extra_argv": {"type": "list", "elements": "str", "default": []},
    "timeout": {"type": "int", "default": DEFAULT_TIMEOUT_S},
}


@contextmanager
def config_file(path: str | None, content: str | None) -> Iterator[str]:
    """The config's path: the given one, or a private temporary file holding the given content."""
    if path is not None:
        yield path
        return
    # mkstemp creates the file 0600; the resolver runs as the same user.
    with tempfile.NamedTemporaryFile("w", prefix="sglang-config-check-", suffix=".yaml") as handle:
        handle.write(content)
        handle.flush()
        yield handle.name


def check_many(module: AnsibleModule, params: dict, shown_env: dict) -> None:
    """I(configs): each written to a private temporary file, all resolved in one run; each answer returned."""
    bad = [i for i, c in enumerate(params["configs"]) if not isinstance(c.get("name"), str) or "content" not in c]
    if bad:
        module.fail_json(msg=f"configs[{bad[0]}]: give each config as {{name, content, environment}}")
    try:
        with ExitStack() as stack:
            cases = [(c["name"], stack.enter_context(config_file(None, c["content"])), dict(c.get("environment") or {}))
                     for c in params["configs"]]  # fmt: skip
            answers = check_configs(params["python"], cases, server_args_module=params["server_args_module"],
                                    extra_argv=params["extra_argv"], timeout=params["timeout"])  # fmt: skip
    except ResolverUnavailable as error:
        module.fail_json(msg=f"could not run SGLang's resolver: {error}", rejected=False, environment=shown_env)
    results = [{"name": name, **{k: v for k, v in answer.as_dict().items() if k != "resolved"}}
               for name, answer in answers.items()]  # fmt: skip
    module.exit_json(changed=False, rejected=any(r["rejected"] for r in results), results=results,
                     message=f"{sum(r['rejected'] for r in results)} of {len(results)} configs rejected",
                     environment=shown_env)  # fmt: skip


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[["config", "content", "configs"]],
        required_one_of=[["config", "content", "configs"]],
        supports_check_mode=True,
    )
    params = module.params
    shown_env = mask_environment(params["environment"])
    if params["configs"] is not None:
        check_many(module, params, shown_env)
    try:
        with config_file(params["config"], params["content"]) as config:
            result = check_config(params["python"], config, params["environment"],
                                  server_args_module=params["server_args_module"], extra_argv=params["extra_argv"],
                                  timeout=params["timeout"])
    except ResolverUnavailable as error:
        module.fail_json(msg=f"could not run SGLang's resolver: {error}", rejected=False, environment=shown_env)
    if result.rejected:
        module.fail_json(msg=result.message, environment=shown_env, **result.as_dict())
    module.exit_json(changed=False, environment=shown_env, **result.as_dict())


if __name__ == "__main__":
    main()
