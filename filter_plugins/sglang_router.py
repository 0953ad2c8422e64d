"""Filter for the sglang_router role: the URL it registers a replica at (module_utils/specgate/fleet/router_client.py,
unit-tested). The router's own URL is specgate_local_url's (filter_plugins/specgate_urls.py), as every server's is.
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.fleet.router_client import worker_url


def sglang_router_worker_url_of(host: str, hostvars: Any, default_port: Any) -> str:
    """`{{ inventory_hostname | sglang_router_worker_url_of(hostvars, 30000) }}` → http://10.0.0.11:30000."""
    return worker_url(host, hostvars.get(host) or {}, default_port)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_router_worker_url_of": sglang_router_worker_url_of}
