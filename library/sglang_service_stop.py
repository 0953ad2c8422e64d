#!/usr/bin/python
"""Ansible module: stop the SGLang unit and prove its processes, its port and their GPU memory are gone."""

from __future__ import annotations

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.gpu_release import (
    NVIDIA_SMI_QUERY,
    GpuQueryError,
    query_nvidia_smi,
    wait_for_gpu_release,
)
from ansible.module_utils.specgate.service.unit_processes import (
    SystemctlShowError,
    cgroup_pids,
    descendants,
    show_unit,
    stop_is_needed,
    wait_until_gone,
    was_running,
)

DOCUMENTATION = r"""
---
module: sglang_service_stop
short_description: Stop a systemd unit and wait until its processes, port and GPU memory are released
description:
  - Records every PID of the unit (its cgroup and the main PID's descendants), runs C(systemctl stop),
    then polls until each PID has exited and nothing accepts connections on I(port) any more.
  - A PID still alive after I(stop_timeout) seconds is sent SIGKILL and given I(kill_grace) more seconds.
    The module fails, naming the survivors, rather than let a second server start beside a first one.
  - With I(gpu_wait), polls C(nvidia-smi --query-compute-apps=pid,used_memory) until none of the recorded
    PIDs holds GPU memory, bounded by I(gpu_release_timeout). No fixed sleeps anywhere.
  - A unit that is not running is still checked (port and leftover PIDs) and reports C(changed=false).
  - Supports check mode (reports what would be stopped).
version_added: "0.1.0"
author: specgate
options:
  unit:
    description: Unit name, e.g. C(sglang.service).
    type: str
    required: true
  port:
    description: TCP port the server listens on; the stop is only complete once nothing accepts on it.
    type: int
  host:
    description: Address the port is probed on.
    type: str
    default: 127.0.0.1
  stop_timeout:
    description: Seconds to wait for the recorded PIDs after C(systemctl stop) returned, before SIGKILL.
    type: float
    default: 120
  kill_grace:
    description: Seconds granted after SIGKILL before the module gives up.
    type: float
    default: 10
  gpu_wait:
    description: Wait for the GPU memory of the recorded PIDs to be released (hosts with NVIDIA GPUs).
    type: bool
    default: false
  gpu_release_timeout:
    description: Seconds to wait for the GPU memory release.
    type: float
    default: 120
  nvidia_smi:
    description: nvidia-smi binary, a name on PATH or an absolute path.
    type: str
    default: nvidia-smi
  poll_interval:
    description: Seconds between polls.
    type: float
    default: 0.2
"""

EXAMPLES = r"""
- name: Stop the running server and wait until its processes, port and GPU memory are released
  sglang_service_stop:
    unit: sglang.service
    port: 30000
    stop_timeout: 120
    gpu_wait: true
  register: __sglang_service_stop
"""

RETURN = r"""
was_active:
  description: ActiveState of the unit before the stop was asked for.
  returned: always
  type: str
pids:
  description: PIDs recorded before the stop (cgroup members and descendants of the main PID).
  returned: always
  type: list
  elements: int
stop_s:
  description: Seconds C(systemctl stop) took (systemd's own SIGTERM, TimeoutStopSec, SIGKILL sequence).
  returned: unless check mode
  type: float
processes:
  description: gone, waited_s, killed (PIDs that needed SIGKILL), survivors, port_free.
  returned: unless check mode
  type: dict
gpu:
  description: released, waited_s, polls, still_held (PID to MiB). Absent without I(gpu_wait).
  returned: when gpu_wait
  type: dict
"""


def unit_pids(module: AnsibleModule, unit: str) -> tuple[dict[str, str], set[int]]:
    try:
        props = show_unit(module.run_command, unit, ("ActiveState", "SubState", "MainPID", "ControlGroup", "LoadState"))
    except SystemctlShowError as error:
        module.fail_json(msg=str(error))
    pids = cgroup_pids(props.get("ControlGroup", ""))
    main_pid = int(props.get("MainPID") or 0)
    if main_pid > 0:
        pids.add(main_pid)
    return props, pids | descendants(pids)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "port": {"type": "int"},
            "host": {"type": "str", "default": "127.0.0.1"},
            "stop_timeout": {"type": "float", "default": 120},
            "kill_grace": {"type": "float", "default": 10},
            "gpu_wait": {"type": "bool", "default": False},
            "gpu_release_timeout": {"type": "float", "default": 120},
            "nvidia_smi": {"type": "str", "default": "nvidia-smi"},
            "poll_interval": {"type": "float", "default": 0.2},
        },
        supports_check_mode=True,
    )
    p = module.params
    props, pids = unit_pids(module, p["unit"])
    was_active = props.get("ActiveState", "unknown")
    running = was_running(props)
    result = {"was_active": was_active, "pids": sorted(pids), "changed": running}
    if module.check_mode:
        module.exit_json(**result)

    started = time.monotonic()
    if stop_is_needed(props):
        rc, out, err = module.run_command(["systemctl", "stop", p["unit"]])
        if rc != 0:
            module.fail_json(msg=f"systemctl stop {p['unit']} failed: {err.strip() or out.strip()}", **result)
    result["stop_s"] = round(time.monotonic() - started, 3)

    gone = wait_until_gone(
        pids,
        timeout=p["stop_timeout"],
        kill_grace=p["kill_grace"],
        port=p["port"],
        host=p["host"],
        interval=p["poll_interval"],
    )
    result["processes"] = gone.as_dict()
    result["changed"] = running or bool(gone.killed)
    if not gone.gone:
        problems = []
        if gone.survivors:
            problems.append(f"PIDs {gone.survivors} survived SIGKILL")
        if not gone.port_free:
            problems.append(
                f"something still accepts connections on {p['host']}:{p['port']} (not one of the unit's PIDs)"
            )
        module.fail_json(
            msg=f"{p['unit']} did not stop cleanly after {gone.waited_s:.1f} s: {'; '.join(problems)}. "
            "Refusing to start a second server beside it.",
            **result,
        )

    if p["gpu_wait"] and pids:
        command = [p["nvidia_smi"], *NVIDIA_SMI_QUERY[1:]]
        try:
            gpu = wait_for_gpu_release(
                pids,
                query=lambda: query_nvidia_smi(command),
                timeout=p["gpu_release_timeout"],
                interval=max(p["poll_interval"], 0.25),
            )
        except GpuQueryError as exc:
            module.fail_json(msg=f"cannot tell whether GPU memory was released: {exc}", **result)
        result["gpu"] = gpu.as_dict()
        if not gpu.released:
            module.fail_json(
                msg=f"GPU memory still held by PIDs {sorted(gpu.still_held)} after {gpu.waited_s:.1f} s "
                "(sglang_service_gpu_release_timeout); not starting the new server into a full GPU.",
                **result,
            )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
