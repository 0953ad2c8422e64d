#!/usr/bin/python
"""Documentation of the specgate_secrets_on_command_line action (action_plugins/): it runs on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specgate_secrets_on_command_line
short_description: Warn when a secret was given on the command line instead of from vault
description:
  - A secret passed as C(-e model_weights_hf_token=...) is in the controller's process list, readable by every
    user there, and in the shell's history. This action looks for the values of the named variables in
    ansible-playbook's own arguments and, for each found, warns pointing to vault (or C(-e @file)).
  - Values shorter than 8 characters are not looked for. Nothing is changed; the play goes on.
  - An action plugin running on the controller; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  names:
    description: Variables holding secrets.
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
  action:
    support: full
"""

EXAMPLES = r"""
- name: Warn when a secret came on the command line (process list, shell history) instead of vault
  specgate_secrets_on_command_line:
    names: [model_weights_hf_token, sglang_service_api_key]
"""

RETURN = r"""
exposed:
  description: The names whose value was found on the command line.
  returned: always
  type: list
  elements: str
"""


def main() -> None:
    raise SystemExit("specgate_secrets_on_command_line is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
