#!/usr/bin/python
"""Ansible module: one node's part of a multi-node SGLang deployment - its unit, whether it joined, its journal."""

from __future__ import annotations

import pwd
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.node_join import joined, read_tables, resolve, socket_inodes
from ansible.module_utils.specgate.service.readiness import UnitState, journal_tail, unit_gave_up
from ansible.module_utils.specgate.service.unit_processes import (
    SystemctlShowError,
    cgroup_pids,
    descendants,
    show_unit,
)

DOCUMENTATION = r"""
---
module: sglang_service_node_state
short_description: Report one node of a multi-node SGLang deployment - unit state, rendezvous join, journal
description:
  - Reads the unit's state from systemd (C(ActiveState), C(SubState), C(NRestarts), C(ExecMainStatus)) and says
    whether the engine gave up since it was started (it failed, or systemd restarted it).
  - With I(rendezvous_host) and I(rendezvous_port), says whether the unit's processes hold an ESTABLISHED TCP
    connection to rank 0's C(--dist-init-addr) (torch.distributed's store, which every node keeps a connection to
    for the process group's life), read from C(/proc). A node without one has not joined, or has left. Where the
    processes' fd links cannot be read, a connection owned by the unit's service user counts.
  - With I(journal), returns the unit's journal since I(since), secrets redacted.
  - Reads only; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  unit:
    description: The node's SGLang unit, e.g. C(sglang.service).
    type: str
    required: true
  baseline_restarts:
    description:
      - The unit's C(NRestarts) right after it was started; more means systemd restarted a crashed engine.
      - Unset, only the unit's state now is judged.
    type: int
  rendezvous_host:
    description: Rank 0's rendezvous host (the host part of C(--dist-init-addr)). Unset, the join is not judged.
    type: str
  rendezvous_port:
    description: Rank 0's rendezvous port (C(sglang_service_dist_init_port)).
    type: int
  journal:
    description: Return the unit's journal since I(since).
    type: bool
    default: false
  since:
    description: Epoch seconds the journal starts at (the restart's start).
    type: float
    default: 0
  journal_lines:
    description: Journal lines returned at most.
    type: int
    default: 40
  redact:
    description: Secrets to blank out of the journal lines.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Ask a follower whether it joined rank 0's rendezvous and why it stopped, if it did
  sglang_service_node_state:
    unit: sglang.service
    baseline_restarts: 0
    rendezvous_host: 10.0.0.11
    rendezvous_port: 25000
    journal: true
    since: "{{ restart_started_at }}"
"""

RETURN = r"""
active_state:
  description: systemd's ActiveState of the unit.
  returned: always
  type: str
sub_state:
  description: systemd's SubState of the unit.
  returned: always
  type: str
n_restarts:
  description: systemd's NRestarts of the unit.
  returned: always
  type: int
exec_main_status:
  description: Exit status of the unit's last main process (0 while it runs).
  returned: always
  type: int
gave_up:
  description: Why the engine can no longer become ready (it exited, or systemd restarted it), or null.
  returned: always
  type: str
joined:
  description: Whether the unit's processes hold a connection to the rendezvous; null when not judged.
  returned: always
  type: bool
journal:
  description: The unit's journal since I(since), secrets redacted.
  returned: with journal
  type: list
  elements: str
"""


def service_uid(user: str) -> int | None:
    """The uid of the unit's own service user; None for root or none (root's sockets prove nothing)."""
    try:
        uid = pwd.getpwnam(user).pw_uid if user else None
    except KeyError:
        return None
    return uid or None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "baseline_restarts": {"type": "int"},
            "rendezvous_host": {"type": "str"},
            "rendezvous_port": {"type": "int"},
            "journal": {"type": "bool", "default": False},
            "since": {"type": "float", "default": 0},
            "journal_lines": {"type": "int", "default": 40},
            "redact": {"type": "list", "elements": "str", "default": [], "no_log": True},
        },
        required_together=[("rendezvous_host", "rendezvous_port")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        props = show_unit(module.run_command, p["unit"],
                          ["ActiveState", "SubState", "NRestarts", "MainPID", "ExecMainStatus", "ControlGroup",
                           "User"])
    except SystemctlShowError as error:
        module.fail_json(msg=str(error))
    state = UnitState.from_props(props)
    result = {
        "changed": False,
        "active_state": state.active_state,
        "sub_state": state.sub_state,
        "n_restarts": state.n_restarts,
        "exec_main_status": int(props.get("ExecMainStatus") or 0),
        "gave_up": unit_gave_up(
            state, state.n_restarts if p["baseline_restarts"] is None else p["baseline_restarts"]),
        "joined": None,
    }
    if p["rendezvous_host"]:
        roots = cgroup_pids(props.get("ControlGroup", "")) | ({state.main_pid} if state.main_pid else set())
        pids = roots | descendants(roots)
        result["joined"] = bool(pids) and joined(read_tables(), socket_inodes(pids), resolve(p["rendezvous_host"]),
                                                 p["rendezvous_port"], service_uid(props.get("User", "")))
    if p["journal"]:
        since = p["since"] or time.time() - 3600
        result["journal"] = journal_tail(module.run_command, p["unit"], since, p["journal_lines"], p["redact"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
