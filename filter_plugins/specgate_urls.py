"""Filter: the URL a server's own host reaches it on, from its listen address and port (logic in common/http.py).

One builder for the engine's URL (sglang_service), the router's (sglang_router, and fleet_rollout reaching a fleet's
router) and Prometheus's (sglang_monitoring): loopback for a wildcard address, an IPv6 address in brackets.
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.http import local_url


def specgate_local_url(listen_host: str | None, port: Any) -> str:
    """`{{ sglang_service_host | specgate_local_url(sglang_service_port) }}` → http://127.0.0.1:30000
    (`fd00::5` → http://[fd00::5]:30000)."""
    try:
        return local_url(listen_host, port)
    except (TypeError, ValueError) as error:
        raise AnsibleFilterError(f"specgate_local_url: port {port!r} is not a port number ({error})") from error


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"specgate_local_url": specgate_local_url}
