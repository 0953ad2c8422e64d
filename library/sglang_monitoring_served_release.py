#!/usr/bin/python
"""Read which release a host serves, and its config and gate record (module_utils/specgate/monitor/served)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.monitor.served import ServedReleaseError, read_served

DOCUMENTATION = r"""
---
module: sglang_monitoring_served_release
short_description: Read which release the host serves, which is known-good, and the served release's records
description:
  - Reads the service's active and known-good pointers under I(base) and the active release's server.yaml and
    gate.json, in one call, for the monitoring stage's textfile (specgate.prom).
  - Returns the files as text; the controller parses them. Changes nothing; supports check mode.
  - Fails when the active pointer names a release without its server.yaml.
version_added: "0.1.0"
author: specgate
options:
  base:
    description: The service's base directory (the parent of releases/, active and known-good).
    type: path
    required: true
attributes:
  check_mode:
    support: full
"""

EXAMPLES = r"""
- name: Read what the host serves
  sglang_monitoring_served_release:
    base: /opt/specgate
  become: true
  register: served
"""

RETURN = r"""
active:
  description: The served release's id; empty when the host serves none.
  returned: always
  type: str
known_good:
  description: The known-good release's id; empty when there is none.
  returned: always
  type: str
server_yaml:
  description: The served release's server.yaml as text; null when the host serves none.
  returned: always
  type: str
gate_json:
  description: The served release's gate.json as text; null when it was never gated.
  returned: always
  type: str
"""


def main() -> None:
    module = AnsibleModule(argument_spec={"base": {"type": "path", "required": True}}, supports_check_mode=True)
    try:
        served = read_served(module.params["base"])
    except ServedReleaseError as error:
        module.fail_json(msg=str(error))
    module.exit_json(changed=False, **served)


if __name__ == "__main__":
    main()
