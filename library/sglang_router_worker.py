#!/usr/bin/python
"""Ansible module: put one worker behind sglang-router, or take it out, and wait for the router to have done it."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.fleet.router_client import FleetError, RouterClient
from ansible.module_utils.specgate.fleet.router_workers import add_worker, remove_worker

DOCUMENTATION = r"""
---
module: sglang_router_worker
short_description: Add a worker to sglang-router or remove it, waiting until the router reports the result
description:
  - Speaks sglang-router 0.3.2's worker API (C(POST /workers), C(GET /workers), C(GET /workers/{id}),
    C(DELETE /workers/{id})). Registration and removal run in the router's background; the module waits for them.
  - I(state=present) registers I(worker_url) (sending I(worker_api_key) for the router to use with the worker) and
    waits until the router reports it healthy, up to I(timeout) seconds; a worker already listed is not registered
    again, only waited for. Fails naming the URL and the last state seen when the router rejects it or time runs out.
  - I(state=absent) removes I(worker_url) and waits until the router no longer knows it; a worker the router does
    not list is left alone. Refused before anything changes when removing it would leave fewer than I(min_healthy)
    healthy workers behind the router (the role's C(sglang_router_min_healthy_workers)).
  - Draining the removed worker's queue is the job of M(sglang_worker_drain).
  - Supports check mode; the router is then only read, and the result says what would change (a removal the floor
    refuses fails in check mode too).
version_added: "0.1.0"
author: specgate
options:
  state:
    description: Whether the worker should be behind the router.
    type: str
    choices: [present, absent]
    default: present
  router_url:
    description: The router, C(http://host:port); the module runs where this URL is reachable (the router's host).
    type: str
    required: true
  worker_url:
    description: The worker as the router reaches it, C(http://host:port) (a trailing slash is dropped).
    type: str
    required: true
  min_healthy:
    description: Healthy workers that must stay behind the router after a removal (state=absent).
    type: int
    default: 1
  timeout:
    description: Seconds to wait for the router to report the worker healthy (present) or gone (absent).
    type: float
    default: 300
  poll_interval:
    description: Seconds between reads of the router while waiting.
    type: float
    default: 0.5
  api_key:
    description: The router's own API key (its C(--api-key)), sent as a bearer token; null when it has none.
    type: str
  worker_api_key:
    description: The worker's API key, handed to the router at registration (it probes C(/server_info) with it).
    type: str
notes:
  - The router keeps its workers in memory; a router restart forgets them until they are registered again.
"""

EXAMPLES = r"""
- name: Take this replica out of the router, keeping at least one healthy replica serving
  sglang_router_worker:
    state: absent
    router_url: http://127.0.0.1:8000
    worker_url: http://10.0.0.11:30000
    min_healthy: 1
  delegate_to: router1

- name: Put it back and wait until the router reports it healthy
  sglang_router_worker:
    state: present
    router_url: http://127.0.0.1:8000
    worker_url: http://10.0.0.11:30000
    worker_api_key: "{{ sglang_service_api_key }}"
    timeout: 300
  delegate_to: router1
"""

RETURN = r"""
url:
  description: The worker URL as the router was given it (normalised).
  returned: always
  type: str
worker_id:
  description: The router's id of the worker ("" when it was absent and stays so).
  returned: always
  type: str
message:
  description: What was done, or in check mode what would be done.
  returned: always
  type: str
waited_s:
  description: Seconds spent waiting for the router after asking it.
  returned: always
  type: float
polls:
  description: Reads of the router while waiting.
  returned: always
  type: int
healthy_before:
  description: Healthy workers behind the router before the change.
  returned: always
  type: int
healthy_after:
  description: Healthy workers behind the router after it (before, in check mode).
  returned: always
  type: int
workers:
  description: The router's workers at the end (id, url, healthy, model_id).
  returned: always
  type: list
  elements: dict
"""

ARGUMENT_SPEC = {
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "router_url": {"type": "str", "required": True},
    "worker_url": {"type": "str", "required": True},
    "min_healthy": {"type": "int", "default": 1},
    "timeout": {"type": "float", "default": 300},
    "poll_interval": {"type": "float", "default": 0.5},
    "api_key": {"type": "str", "no_log": True},
    "worker_api_key": {"type": "str", "no_log": True},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        router = RouterClient(p["router_url"], api_key=p["api_key"])
        if p["state"] == "absent":
            result = remove_worker(router, p["worker_url"], p["min_healthy"], p["timeout"],
                                   interval=p["poll_interval"], check_mode=module.check_mode)
        else:
            result = add_worker(router, p["worker_url"], p["timeout"], api_key=p["worker_api_key"],
                                interval=p["poll_interval"], check_mode=module.check_mode)
    except FleetError as exc:
        module.fail_json(msg=str(exc), url=p["worker_url"], state=p["state"])
    module.exit_json(**result.as_dict())


if __name__ == "__main__":
    main()
