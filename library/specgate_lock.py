#!/usr/bin/python
"""Ansible module: take, renew or release the host's change lock (one run at a time changes the service)."""

from __future__ import annotations

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.common.progress import write_json_atomic
from ansible.module_utils.specgate.service.host_lock import (
    acquire,
    describe,
    read_record,
    release,
    stale_reason,
    timeout_message,
    waiting_line,
)

DOCUMENTATION = r"""
---
module: specgate_lock
short_description: Take, renew or release the host's change lock, waiting for another run up to a timeout
description:
  - The lock is a JSON record at I(path) naming its holder (controller, user, ansible-playbook PID, playbook),
    when it was taken and until when its lease runs. Reads and writes happen under a short C(flock) on
    C(<path>.guard), so two runs never both take it.
  - C(state=acquired) takes a free lock, renews the lock when I(token) already holds it, and takes over a dead
    run's lock (its lease lapsed, or its token is I(takeover)). While another live run holds it, the module
    waits up to I(timeout) seconds, then fails naming the holder and since when.
  - C(state=released) drops the lock when I(token) holds it (or always, with I(force)).
  - Check mode reads the lock and reports whether it would be taken, changing nothing.
version_added: "0.1.0"
author: specgate
options:
  path:
    description: The lock record. Its directory is created (mode 0755) when missing.
    type: path
    required: true
  state:
    description: C(acquired) to take or renew the lock, C(released) to drop it.
    type: str
    choices: [acquired, released]
    default: acquired
  token:
    description: This run's secret token; the same token renews instead of waiting for itself.
    type: str
    required: true
    no_log: true
  holder:
    description: Who takes the lock, shown to a run that waits for it.
    type: dict
    default: {}
    suboptions:
      controller:
        description: The controller's host name.
        type: str
      user:
        description: The user running ansible-playbook on the controller.
        type: str
      pid:
        description: The PID of ansible-playbook on the controller.
        type: int
      playbook:
        description: The play that holds the lock.
        type: str
  lease:
    description: Seconds the lock stays held without a renewal; a record older than that belongs to a dead run.
    type: int
    default: 14400
  timeout:
    description: Seconds to wait for another run's lock before failing.
    type: float
    default: 1800
  poll_interval:
    description: Seconds between attempts while waiting.
    type: float
    default: 5
  takeover:
    description: The token of a holder the controller found dead (its ansible-playbook PID is gone).
    type: str
    default: ""
    no_log: true
  force:
    description: With C(state=released), drop the lock whoever holds it (playbooks/unlock.yml).
    type: bool
    default: false
  progress_file:
    description:
      - While waiting for another run's lock, rewrite this file at each poll with a C(line) naming the holder, since
        when, and how long this run waited (run the task async and follow it with specgate_follow_job to print it).
    type: path
"""

EXAMPLES = r"""
- name: Wait for the host's change lock, then take it
  specgate_lock:
    path: /run/specgate/sglang.lock
    token: "{{ run_token }}"
    holder: {controller: ctl01, user: alice, pid: 4242, playbook: deploy.yml}
    timeout: 600

- name: Release the lock on every exit path
  specgate_lock:
    path: /run/specgate/sglang.lock
    token: "{{ run_token }}"
    state: released
"""

RETURN = r"""
acquired:
  description: Whether this run holds the lock now.
  type: bool
  returned: always
renewed:
  description: The lock was this run's already; only its lease moved on.
  type: bool
  returned: state=acquired
holder:
  description: The record in force (this run's when acquired), without its token.
  type: dict
  returned: always
waited:
  description: Seconds spent waiting for another run.
  type: float
  returned: state=acquired
replaced:
  description: A dead run's record this run took over, and why it counted as dead.
  type: dict
  returned: when a dead run's lock was taken over
outcome:
  description: With state=released, "released", "absent" or "held by another run".
  type: str
  returned: state=released
"""


def _public(record: dict | None) -> dict:
    return {k: v for k, v in (record or {}).items() if k != "token"}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "state": {"type": "str", "choices": ["acquired", "released"], "default": "acquired"},
            "token": {"type": "str", "required": True, "no_log": True},
            "holder": {
                "type": "dict",
                "default": {},
                "options": {
                    "controller": {"type": "str"},
                    "user": {"type": "str"},
                    "pid": {"type": "int"},
                    "playbook": {"type": "str"},
                },
            },
            "lease": {"type": "int", "default": 14400},
            "timeout": {"type": "float", "default": 1800},
            "poll_interval": {"type": "float", "default": 5},
            "takeover": {"type": "str", "default": "", "no_log": True},
            "force": {"type": "bool", "default": False},
            "progress_file": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    now = time.time()

    if module.check_mode:
        current = read_record(p["path"])
        if p["state"] == "released":
            ours = current is not None and (p["force"] or current.get("token") == p["token"])
            module.exit_json(changed=ours, acquired=False, holder=_public(current))
        free = current is None or current.get("token") == p["token"] or bool(stale_reason(current, now, p["takeover"]))
        module.exit_json(changed=free, acquired=False, holder=_public(current), would_wait=not free)

    if p["state"] == "released":
        outcome, record = release(p["path"], p["token"], p["force"])
        module.exit_json(changed=outcome == "released", acquired=False, outcome=outcome, holder=_public(record))

    me = {"token": p["token"], **{k: v for k, v in p["holder"].items() if v is not None}}
    on_wait = None
    if p["progress_file"]:
        # Run async and followed (specgate_follow_job): who holds the lock and how long this run waited, every poll.
        def on_wait(record: dict, waited_s: float, at: float) -> None:
            line = waiting_line(record, waited_s, at, p["timeout"])
            write_json_atomic(p["progress_file"], {"line": line, "final": False, "updated_at": at})

    result = acquire(
        p["path"], me, lease_s=p["lease"], timeout_s=p["timeout"], poll_s=p["poll_interval"], takeover=p["takeover"],
        on_wait=on_wait,
    )
    out = {
        "changed": not result.renewed,
        "acquired": result.acquired,
        "renewed": result.renewed,
        "holder": _public(result.record),
        "waited": result.waited_s,
    }
    if result.replaced is not None:
        out["replaced"] = {"holder": describe(result.replaced, now), "because": result.replaced_because}
    if not result.acquired:
        module.fail_json(msg=timeout_message(result.record, p["path"], result.waited_s, time.time()), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
