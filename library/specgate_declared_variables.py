#!/usr/bin/python
"""Documentation of the specgate_declared_variables action (action_plugins/): it runs on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specgate_declared_variables
short_description: Refuse variables meant for the running role that it does not declare
description:
  - Ansible ignores a variable no task reads, so a misspelled one (sglang_service_blocksize for
    sglang_service_block_size) leaves the host as it was while the user believes it was reconfigured.
  - Run inside a role, refuses every variable in the play that carries the role's prefix (the role's name and
    an underscore) but is not an option of any entry point in the role's meta/argument_specs.yml, and every
    unprefixed name one small slip away from such an option (a misspelled prefix), suggesting the closest name.
    A variable a release renamed or retired is refused with what replaced it.
  - Names starting with an underscore (roles' private variables) and names carrying another role's prefix are
    left alone; variables of your own listed in specgate_allowed_variables pass.
  - An action plugin running on the controller; changes nothing; supports check mode.
version_added: "0.1.0"
author: specgate
options: {}
attributes:
  check_mode:
    support: full
  action:
    support: full
"""

EXAMPLES = r"""
- name: Refuse sglang_service variables no stage declares (Ansible would ignore a misspelled one)
  specgate_declared_variables:
"""

RETURN = r"""
msg:
  description: On failure, each unknown name with the closest declared name (or what replaced it) and the fix.
  returned: failure
  type: str
"""


def main() -> None:
    raise SystemExit("specgate_declared_variables is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
