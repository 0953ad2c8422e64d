"""Filters for the sglang_router role: the router's URL as its own host reaches it.

One builder for the role itself and for fleet_rollout, which reaches the router of a fleet from the replicas'
rollout (module_utils/specgate/fleet/router_client.py, unit-tested).
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.fleet.router_client import local_router_url


def sglang_router_local_url(listen_host: str, port: Any) -> str:
    """`{{ sglang_router_host | sglang_router_local_url(sglang_router_port) }}` → http://127.0.0.1:30080."""
    return local_router_url(listen_host, port)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_router_local_url": sglang_router_local_url}
