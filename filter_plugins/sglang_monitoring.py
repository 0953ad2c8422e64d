"""Filter: the facts of the release a host serves → the node exporter's textfile (logic in monitor/textfile)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.monitor.textfile import textfile


def sglang_monitoring_textfile(active: str, known_good: str, server_config: Any, gate: Any) -> str:
    """`{{ active_id | sglang_monitoring_textfile(known_good_id, server_yaml, gate_json_or_none) }}` → the text."""
    if not active:
        raise AnsibleFilterError("sglang_monitoring_textfile: the host serves no release (its active pointer is unset)")
    if not isinstance(server_config, Mapping):
        raise AnsibleFilterError(f"sglang_monitoring_textfile: release {active}'s server.yaml is not a mapping")
    # A release id is its label and a 10-hex digest of what it runs (sglang_release_id).
    profile = re.sub(r"-[0-9a-f]{10}$", "", active)
    return textfile(active, profile, active == known_good, server_config, gate if isinstance(gate, Mapping) else None)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_monitoring_textfile": sglang_monitoring_textfile}
