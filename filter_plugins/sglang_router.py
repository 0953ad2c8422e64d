"""Filters for the sglang_router role: the URL it registers a replica at (module_utils/specgate/fleet/router_client.py,
unit-tested), and the workers a group of hosts makes. The router's own URL is specgate_local_url's
(filter_plugins/specgate_urls.py), as every server's is.
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.fleet.router_client import worker_url
from ansible.module_utils.specgate.service.node_topology import replicas


def sglang_router_worker_url_of(host: str, hostvars: Any, default_port: Any) -> str:
    """`{{ inventory_hostname | sglang_router_worker_url_of(hostvars, 30000) }}` → http://10.0.0.11:30000."""
    return worker_url(host, hostvars.get(host) or {}, default_port)


def sglang_router_replica_urls(hosts: list[str], hostvars: Any, groups: Any, default_port: Any) -> list[str]:
    """`{{ groups['sglang_hosts'] | sglang_router_replica_urls(hostvars, groups, 30000) }}` → one worker URL per
    replica the hosts make: a single host's, or a node group's rank 0's (the only node that serves the API)."""
    try:
        found = replicas(list(hosts), hostvars, groups)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error
    return [sglang_router_worker_url_of(replica.rank0, hostvars, default_port) for replica in found]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_router_worker_url_of": sglang_router_worker_url_of,
                "sglang_router_replica_urls": sglang_router_replica_urls}
