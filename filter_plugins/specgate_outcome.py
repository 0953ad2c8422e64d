"""Filters: what a run left on a host, for the end-of-run blocks (module_utils/specgate/common/run_outcome.py).

    {{ specgate_switch | default({}) | specgate_deploy_outcome(specgate_release | default({}),
                                                              specgate_verdict | default({}),
                                                              specgate_failure | default({}), ansible_check_mode) }}
    {{ specgate_sweep | default({}) | specgate_sweep_outcome(specgate_release | default({}),
                                                            specgate_failure | default({}), ansible_check_mode) }}

each give a dict of one-line strings (headline, serving, known_good, reason, ...) the templates lay out.
"""

from __future__ import annotations

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.common.run_outcome import deploy_outcome, sweep_outcome


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_deploy_outcome": deploy_outcome, "specgate_sweep_outcome": sweep_outcome}
