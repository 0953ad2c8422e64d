#!/usr/bin/python
"""Ansible module: wait until a worker taken out of the router has no request running or waiting."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.fleet.router_client import FleetError
from ansible.module_utils.specgate.fleet.worker_drain import read_load, wait_worker_idle

DOCUMENTATION = r"""
---
module: sglang_worker_drain
short_description: Wait until an SGLang worker's own queue is empty (running + waiting requests 0)
description:
  - Polls the worker's C(GET /v1/loads) (SGLang 0.5.23, C(srt/entrypoints/v1_loads.py)) and sums
    C(num_running_reqs) and C(num_waiting_reqs) over its DP ranks until both are 0, for up to I(timeout) seconds.
    The router's own load figures do not measure this; the worker's queue does.
  - Meant for after M(sglang_router_worker) took the worker out of the router, before its engine is stopped or
    reconfigured. A worker on which nothing listens any more counts as drained (reported as C(listening=false)).
  - Fails with the last reading when the worker is still busy at the timeout, and at once when the worker does not
    serve C(/v1/loads) or refuses the key.
  - Changes nothing. In check mode (where the worker was not taken out, so it still gets requests) it reads the
    queue once and reports it, without waiting.
version_added: "0.1.0"
author: specgate
options:
  url:
    description: The worker, C(http://host:port).
    type: str
    required: true
  timeout:
    description: Seconds to wait for the queue to empty (the role's C(sglang_router_drain_timeout)).
    type: float
    default: 600
  poll_interval:
    description: Seconds between reads of C(/v1/loads).
    type: float
    default: 1.0
  api_key:
    description: The worker's API key (C(/v1/loads) wants it when the engine has one).
    type: str
"""

EXAMPLES = r"""
- name: Wait until the replica taken out of the router has finished its requests
  sglang_worker_drain:
    url: http://10.0.0.11:30000
    timeout: 600
    api_key: "{{ sglang_service_api_key }}"
  delegate_to: router1
"""

RETURN = r"""
idle:
  description: Whether the queue was empty (or nothing listened) before the timeout; in check mode, whether it is now.
  returned: always
  type: bool
waited_s:
  description: Seconds the drain took.
  returned: always
  type: float
polls:
  description: Reads of /v1/loads.
  returned: always
  type: int
reason:
  description: Why the wait ended.
  returned: always
  type: str
listening:
  description: False when nothing listened on the worker's port (counted as drained).
  returned: always
  type: bool
last:
  description: The last reading, C({running, waiting}); null when none came.
  returned: always
  type: dict
observed:
  description: Each change of the queue seen while waiting, C({t, running, waiting}) with t in seconds from the start.
  returned: always
  type: list
  elements: dict
in_flight_at_start:
  description: Requests running or waiting at the first reading, right after the worker left the router (what the
    drain waited for); 0 when nothing listened, null when no reading came. In check mode, the queue now.
  returned: always
  type: int
errors:
  description: Polls that got no reading (an error or an odd answer), retried.
  returned: always
  type: int
"""

ARGUMENT_SPEC = {
    "url": {"type": "str", "required": True},
    "timeout": {"type": "float", "default": 600},
    "poll_interval": {"type": "float", "default": 1.0},
    "api_key": {"type": "str", "no_log": True},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        if module.check_mode:
            load, answer = read_load(p["url"], api_key=p["api_key"])
            last = {"running": load.running, "waiting": load.waiting} if load is not None else None
            in_flight = load.busy if load is not None else None
            listening = answer.status is not None or "ConnectionRefused" not in (answer.error or "")
            module.exit_json(changed=False, idle=(load is not None and load.busy == 0) or not listening, waited_s=0.0,
                             polls=1, reason="check mode: read once, not waited", listening=listening, last=last,
                             observed=[], in_flight_at_start=in_flight if listening else 0,
                             errors=0 if load is not None or not listening else 1)
        result = wait_worker_idle(p["url"], p["timeout"], api_key=p["api_key"], interval=p["poll_interval"])
    except FleetError as exc:
        module.fail_json(msg=str(exc), url=p["url"])
    if not result.idle:
        module.fail_json(msg=f"the worker did not drain: {result.reason}. Fix: wait for its long requests or raise "
                             "sglang_router_drain_timeout; the router no longer sends it new ones.",
                         **result.as_dict())
    module.exit_json(changed=False, **result.as_dict())


if __name__ == "__main__":
    main()
