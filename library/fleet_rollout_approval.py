#!/usr/bin/python
"""Wait on the controller for a person's approval of a rollout's next batch (module_utils/specgate/fleet/approval)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.fleet.approval import APPROVED, wait_for_approval

DOCUMENTATION = r"""
---
module: fleet_rollout_approval
short_description: Wait for a person to approve the next batch of a fleet rollout, or to stop it
description:
  - Runs on the controller between two batches when fleet_rollout_pause_between_batches is set. Waits until the
    file approve-batch-N (N, the next batch) or the file stop appears in the rollout's report directory, or the
    timeout passes.
  - A file rather than a prompt, so a run without a terminal (CI, AWX, a detached shell) waits as well, and an
    approval written for another batch never starts this one.
  - While it waits, the file waiting-batch-N in that directory says so; it is removed when the wait ends. In check
    mode it does not wait and answers approved.
version_added: "0.1.0"
author: specgate
options:
  reports_dir:
    description: The rollout's report directory on the controller (specgate_rollout.reports_dir).
    type: path
    required: true
  batch:
    description: The number of the batch waiting for approval (1 is the first).
    type: int
    required: true
  timeout:
    description: Seconds to wait before the rollout stops unapproved (fleet_rollout_pause_timeout).
    type: float
    required: true
  poll_interval:
    description: Seconds between looks for the files.
    type: float
    default: 1
attributes:
  check_mode:
    support: full
"""

EXAMPLES = r"""
- name: Wait for a person to approve batch 2 of the rollout
  fleet_rollout_approval:
    reports_dir: /srv/specgate/reports/fleet/20261205T060000Z
    batch: 2
    timeout: 3600
  delegate_to: localhost
"""

RETURN = r"""
decision:
  description: C(approved), C(stopped) (the stop file was written) or C(timed out).
  returned: always
  type: str
waited_s:
  description: Seconds waited.
  returned: always
  type: float
message:
  description: One sentence saying what was decided and which file (or timeout) decided it.
  returned: always
  type: str
"""

ARGUMENT_SPEC = {
    "reports_dir": {"type": "path", "required": True},
    "batch": {"type": "int", "required": True},
    "timeout": {"type": "float", "required": True},
    "poll_interval": {"type": "float", "default": 1},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    if module.check_mode:
        module.exit_json(changed=False, decision=APPROVED, waited_s=0.0, message="check mode: not waited for")
    decision = wait_for_approval(params["reports_dir"], params["batch"], params["timeout"], params["poll_interval"])
    module.exit_json(changed=False, decision=decision.decision, waited_s=round(decision.waited_s, 1),
                     message=decision.message)


if __name__ == "__main__":
    main()
