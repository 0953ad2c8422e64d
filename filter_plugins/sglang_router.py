"""Filters for the sglang_router role: the router's URL as its own host reaches it, and the URL it registers a
replica at.

One builder for the role itself and for fleet_rollout, which reaches the router of a fleet from the replicas'
rollout (module_utils/specgate/fleet/router_client.py, unit-tested).
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.fleet.router_client import local_router_url, worker_url


def sglang_router_local_url(listen_host: str, port: Any) -> str:
    """`{{ sglang_router_host | sglang_router_local_url(sglang_router_port) }}` → http://127.0.0.1:30080."""
    return local_router_url(listen_host, port)


def sglang_router_worker_url_of(host: str, hostvars: Any, default_port: Any) -> str:
    """`{{ inventory_hostname | sglang_router_worker_url_of(hostvars, 30000) }}` → http://10.0.0.11:30000."""
    return worker_url(host, hostvars.get(host) or {}, default_port)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_router_local_url": sglang_router_local_url,
                "sglang_router_worker_url_of": sglang_router_worker_url_of}
