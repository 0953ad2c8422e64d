#!/usr/bin/python
"""Ansible module: which release the active and known-good pointers name, and whether the unit runs."""

from __future__ import annotations

import pwd
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.port_owners import port_holders
from ansible.module_utils.specgate.service.release_pointers import (
    launch_is_newer_than_engine,
    pointer_target,
    release_dirs,
    release_port,
)
from ansible.module_utils.specgate.service.unit_processes import SystemctlShowError, cgroup_pids, descendants, show_unit

DOCUMENTATION = r"""
---
module: sglang_service_state
short_description: Read the active and known-good release pointers and the unit's state in one call
description:
  - Reads the symlinks C(<base_dir>/active) and C(<base_dir>/known-good) (each naming a directory under
    C(<base_dir>/releases)), lists the release directories, and reads C(systemctl show <unit>), in one call
    for everything a reconfigure needs to know before it writes.
  - A missing pointer reads as an empty id (nothing deployed or promoted yet); a pointer that is not a
    symlink into C(<base_dir>/releases) fails the module, because which release serves is then unknown.
  - With I(port), also lists every process listening on that port and whether it belongs to the unit (one of
    its PIDs; or, where another user's processes cannot be read, a socket owned by the unit's User=), so a
    switch can refuse a port a stranger holds before it stops the running server.
  - Says whether the active release's C(launch.yaml) (it holds the API key, which the release id leaves out) was
    rewritten after the running engine started from it, as by a run that rotated the key and stopped before its
    restart.
  - Read-only; supports check mode.
version_added: "0.1.0"
author: specgate
options:
  base_dir:
    description: Base directory of the release layout (C(specgate_sglang_env.base_dir)).
    type: path
    required: true
  unit:
    description: Unit name, e.g. C(sglang.service).
    type: str
    required: true
  port:
    description: TCP port the candidate will listen on; its current holders are returned in RV(port_holders).
    type: int
"""

EXAMPLES = r"""
- name: Read the release pointers and whether the service runs
  sglang_service_state:
    base_dir: /opt/specgate
    unit: sglang.service
  register: __sglang_service_state
"""

RETURN = r"""
active_id:
  description: Release id the active pointer names; empty when there is none.
  returned: always
  type: str
known_good_id:
  description: Release id the known-good pointer names; empty when there is none.
  returned: always
  type: str
trial_id:
  description: Release id the trial pointer names (the last release a sweep switched to as a trial, never promoted);
    empty when there is none.
  returned: always
  type: str
active_state:
  description: The unit's ActiveState (C(active), C(inactive), C(failed), ...).
  returned: always
  type: str
main_pid:
  description: The unit's main PID (0 when not running).
  returned: always
  type: int
unit_file_state:
  description: The unit's UnitFileState (C(enabled), C(disabled); empty when no unit file is installed).
  returned: always
  type: str
releases:
  description: Release directories under C(<base_dir>/releases) (staging directories left out), with mtimes.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/opt/specgate/releases/dflash-bs8-62a1dfa441", "mtime": 1795000000.0}]
active_port:
  description: The port the active release was deployed with (its release.json identity); 0 when unknown.
  returned: always
  type: int
launch_stale:
  description: Whether the active release's launch.yaml was written after the running engine started (the engine
    still runs on the launch settings, such as the API key, it had before); false when the unit does not run.
  returned: always
  type: bool
port_holders:
  description: Processes listening on I(port), each with whether it is one of the unit's; empty when it is free.
  returned: when I(port) is set
  type: list
  elements: dict
  sample: [{"pid": 812, "name": "nginx", "uid": 0, "in_unit": false}]
"""


def unit_uid(user: str) -> int | None:
    """The uid of the unit's User= (None when it runs as root by default or the user does not exist)."""
    try:
        return pwd.getpwnam(user).pw_uid if user else None
    except KeyError:
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "base_dir": {"type": "path", "required": True},
            "unit": {"type": "str", "required": True},
            "port": {"type": "int"},
        },
        supports_check_mode=True,
    )
    try:
        active = pointer_target(module.params["base_dir"], "active")
        known_good = pointer_target(module.params["base_dir"], "known-good")
        trial = pointer_target(module.params["base_dir"], "trial")
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        props = show_unit(module.run_command, module.params["unit"],
                          ("ActiveState", "MainPID", "UnitFileState", "ControlGroup", "User",
                           "ExecMainStartTimestampMonotonic"))
    except SystemctlShowError as error:
        module.fail_json(msg=str(error))
    main_pid = int(props.get("MainPID") or 0)
    extra = {}
    if module.params["port"] is not None:
        unit_pids = cgroup_pids(props.get("ControlGroup", ""))
        if main_pid:
            unit_pids |= {main_pid} | descendants([main_pid])
        extra["port_holders"] = port_holders(module.params["port"], unit_pids, unit_uid(props.get("User", "")))
    module.exit_json(
        changed=False,
        active_port=release_port(module.params["base_dir"], active) if active else 0,
        **extra,
        active_id=active,
        known_good_id=known_good,
        trial_id=trial,
        active_state=props.get("ActiveState", ""),
        launch_stale=bool(main_pid) and launch_is_newer_than_engine(
            module.params["base_dir"], int(props.get("ExecMainStartTimestampMonotonic") or 0), time.time(),
            time.monotonic()),
        main_pid=main_pid,
        unit_file_state=props.get("UnitFileState", ""),
        releases=release_dirs(module.params["base_dir"]),
    )


if __name__ == "__main__":
    main()
