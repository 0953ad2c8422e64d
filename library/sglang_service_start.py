#!/usr/bin/python
"""Ansible module: start the SGLang unit, wait for /health, and prove the answering server runs the candidate."""

from __future__ import annotations

import contextlib
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.common.progress import ProgressWriter
from ansible.module_utils.specgate.service.load_progress import load_report, read_load_times, record_load_time
from ansible.module_utils.specgate.service.readiness import (
    ReadyResult,
    UnitState,
    fetch_server_info,
    http_post,
    identity_mismatches,
    journal_tail,
    probe_health,
    redact,
    wait_ready,
)
from ansible.module_utils.specgate.service.unit_processes import SystemctlShowError, show_unit

DOCUMENTATION = r"""
---
module: sglang_service_start
short_description: Start an SGLang systemd unit, wait until it is healthy and check it runs the expected config
description:
  - Starts I(unit) (optionally after C(systemctl daemon-reload)), then polls C(<url>/health) until it
    answers 200, for at most I(load_timeout) seconds. Refused or reset connections and 503 answers are
    expected while the engine loads and are retried.
  - Watches the unit while waiting; if it fails, exits or is restarted by systemd the wait stops at once
    and the module fails with the unit's journal since the start.
  - Once healthy, reads C(<url>/server_info) (with the API key as a bearer token when one is set) and
    compares every key of I(expected) with what the server reports; a difference fails the module.
  - With I(start=false) nothing is started; the running server is only checked (readiness and identity).
  - Supports check mode (nothing is started or asked).
version_added: "0.1.0"
author: specgate
options:
  unit:
    description: Unit name, e.g. C(sglang.service).
    type: str
    required: true
  url:
    description: Base URL of the server, e.g. C(http://127.0.0.1:30000).
    type: str
    required: true
  start:
    description: Start the unit first. False only checks the server that runs now.
    type: bool
    default: true
  daemon_reload:
    description: Run C(systemctl daemon-reload) before starting (the unit file changed).
    type: bool
    default: false
  load_timeout:
    description: Seconds the engine may take to become healthy.
    type: float
    default: 900
  poll_interval:
    description: Seconds between health polls.
    type: float
    default: 1
  expected:
    description:
      - Settings the answering server must report in C(/server_info), keyed by SGLang flag (dashes) or
        field name (underscores). Paths, numbers and case are compared normalised.
    type: dict
  ignore:
    description: Keys of I(expected) not to compare.
    type: list
    elements: str
    default: []
  api_key:
    description: API key the server requires for C(/server_info).
    type: str
  redact:
    description: Secrets to blank out of journal lines before they are returned.
    type: list
    elements: str
    default: []
  journal_lines:
    description: Journal lines returned on failure.
    type: int
    default: 40
  release:
    description: The release being started, for the progress report and its load-time history.
    type: str
  progress_file:
    description:
      - Where to keep a progress report (JSON with a human C(line)) while the engine loads, for a task
        following this one run async (specgate_follow_job) to print on each poll. Removed at the end.
    type: path
  load_times_file:
    description:
      - JSON file of each release's last load time on this host. The progress report compares the load
        with the last one of I(release); a load that becomes ready is recorded.
    type: path
  gate_url:
    description:
      - Rank 0's gated-launch control server (SGLang's C(--gated-launch-port)), e.g. C(http://127.0.0.1:25100),
        for the rank 0 of a multi-node deployment. After the start, waits until its C(GET /health) answers (it
        starts only once every node joined the process group), then sends C(POST /gate/activate) so every rank
        loads its weights, then waits for the server as without a gate.
      - Unset, the start is not gated.
    type: str
  join_timeout:
    description:
      - Seconds every node may take to join, with I(gate_url). The gate has no timeout of its own; past this
        the module fails instead of waiting out the rendezvous timeout (C(--dist-timeout)).
    type: float
    default: 600
"""

EXAMPLES = r"""
- name: Start the candidate and wait until it answers /health and runs the candidate release
  sglang_service_start:
    unit: sglang.service
    url: http://127.0.0.1:30000
    load_timeout: 900
    expected:
      model-path: /models/kimi-k2.6
      speculative-algorithm: DFLASH
      speculative-num-draft-tokens: 16
    api_key: "{{ sglang_service_api_key }}"
"""

RETURN = r"""
joined:
  description: With I(gate_url), bool, waited_s, reason, as for I(ready), of the wait for every node to join.
  returned: with gate_url, unless check mode
  type: dict
ready:
  description: bool, waited_s, polls, connection_errors, loading_answers, main_pid, reason, last_status.
  returned: unless check mode
  type: dict
identity:
  description: The compared keys as the server reports them.
  returned: when ready
  type: dict
mismatches:
  description: key, expected, actual, missing for each setting the server does not run as expected.
  returned: when ready
  type: list
  elements: dict
journal:
  description: The unit's journal since the start (secrets redacted), on failure.
  returned: on failure
  type: list
  elements: str
"""


def unit_state(module: AnsibleModule, unit: str) -> UnitState:
    try:
        props = show_unit(module.run_command, unit, ("ActiveState", "SubState", "NRestarts", "MainPID"))
    except SystemctlShowError as error:
        module.fail_json(msg=str(error))
    return UnitState.from_props(props)


def activate_gate(gate: str) -> str | None:
    """POST /gate/activate (srt/distributed/gated_launch.py answers "OK"): None once open, else why not."""
    probe = http_post(gate + "/gate/activate", timeout=10.0)
    return None if probe.status == 200 else (f"HTTP {probe.status}" if probe.status else probe.error)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "url": {"type": "str", "required": True},
            "start": {"type": "bool", "default": True},
            "daemon_reload": {"type": "bool", "default": False},
            "load_timeout": {"type": "float", "default": 900},
            "poll_interval": {"type": "float", "default": 1},
            "expected": {"type": "dict"},
            "ignore": {"type": "list", "elements": "str", "default": []},
            "api_key": {"type": "str", "no_log": True},
            "redact": {"type": "list", "elements": "str", "default": [], "no_log": True},
            "journal_lines": {"type": "int", "default": 40},
            "release": {"type": "str"},
            "progress_file": {"type": "path"},
            "load_times_file": {"type": "path"},
            "gate_url": {"type": "str"},
            "join_timeout": {"type": "float", "default": 600},
        },
        supports_check_mode=True,
    )
    p = module.params
    unit = p["unit"]
    secrets = [s for s in [p["api_key"], *p["redact"]] if s]
    if module.check_mode:
        module.exit_json(changed=p["start"])

    since = time.time() - 1
    if p["start"]:
        if p["daemon_reload"]:
            rc, _out, err = module.run_command(["systemctl", "daemon-reload"])
            if rc != 0:
                module.fail_json(msg=f"systemctl daemon-reload failed: {err.strip()}")
        rc, out, err = module.run_command(["systemctl", "start", unit])
        if rc != 0:
            module.fail_json(
                msg=f"systemctl start {unit} failed: {redact(err.strip() or out.strip(), secrets)}",
                journal=journal_tail(module.run_command, unit, since, p["journal_lines"], secrets),
            )

    # systemd does not always zero NRestarts on a start: a unit stopped while it waited to auto-restart a crashed
    # engine (a failed candidate, just before the rollback) keeps its count. Restarts are counted from here; a
    # crash of the engine just started cannot restart it before RestartSec has passed. Without a start (a confirm of
    # what serves now, e.g. the sweep's known-good restore) the wait counts from the unit's NRestarts as it first
    # reads it (None), never from 0: the count a crashed candidate left is not the known-good release's.
    baseline_restarts = unit_state(module, unit).n_restarts if p["start"] else None
    base = p["url"].rstrip("/")
    release = p["release"] or unit
    tracked = bool(p["load_times_file"] and p["release"])
    last_load = read_load_times(p["load_times_file"]).get(release) if tracked else None
    started = time.monotonic()
    writer = None
    if p["progress_file"] and p["start"]:
        def measure() -> dict:
            return load_report(release=release, elapsed=time.monotonic() - started, last=last_load)

        writer = ProgressWriter(p["progress_file"], measure)
        writer.start()
    def wait(url: str, timeout: float) -> ReadyResult:
        return wait_ready(probe=lambda: probe_health(url), unit_state=lambda: unit_state(module, unit),
                          timeout=timeout, baseline_restarts=baseline_restarts, interval=p["poll_interval"])

    try:
        if p["gate_url"] and p["start"]:
            gate = p["gate_url"].rstrip("/")
            joined = wait(gate + "/health", p["join_timeout"])
            if not joined.ready:
                journal = journal_tail(module.run_command, unit, since, p["journal_lines"], secrets)
                module.fail_json(
                    msg=f"not every node joined the deployment within {p['join_timeout']:.0f} s "
                    f"(sglang_service_join_timeout): {joined.reason}. Journal of {unit} since the start:\n"
                    + "\n".join(journal),
                    joined=joined.as_dict(), journal=journal, changed=True,
                )
            activated = activate_gate(gate)
            if activated:
                module.fail_json(msg=f"every node joined, but the gate at {gate} refused to open: {activated}",
                                 joined=joined.as_dict(), changed=True)
        ready = wait(base + "/health", p["load_timeout"])
    finally:
        if writer is not None:
            writer.stop()
            # A start abandoned mid-load (a multi-node restart another node ended) may already have removed it.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p["progress_file"])
    result = {"changed": p["start"], "ready": ready.as_dict()}
    if tracked:
        result["last_load_s"] = last_load
        if ready.ready and p["start"]:
            record_load_time(p["load_times_file"], release, ready.waited_s)
    if not ready.ready:
        journal = journal_tail(module.run_command, unit, since, p["journal_lines"], secrets)
        module.fail_json(
            msg=f"{unit} did not become ready: {ready.reason}. Journal of {unit} since the start:\n"
            + "\n".join(journal),
            journal=journal,
            **result,
        )

    info, error = fetch_server_info(base, p["api_key"])
    if error:
        module.fail_json(msg=f"{unit} is healthy but its identity cannot be checked: {error}", **result)
    expected = p["expected"] or {}
    mismatches = identity_mismatches(expected, info, frozenset(p["ignore"]))
    result["identity"] = {
        key.replace("-", "_"): info.get(key.replace("-", "_")) for key in expected if key not in p["ignore"]
    }
    result["mismatches"] = [m.as_dict() for m in mismatches]
    if mismatches:
        module.fail_json(
            msg=f"the server answering on {base} does not run the expected release: "
            + "; ".join(m.describe() for m in mismatches),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
