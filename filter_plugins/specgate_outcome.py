"""Filters: what a run left on a host, for the end-of-run blocks (module_utils/specgate/common/run_outcome.py).

    {{ specgate_switch | default({}) | specgate_deploy_outcome(specgate_release | default({}),
                                                              specgate_verdict | default({}),
                                                              specgate_failure | default({}), ansible_check_mode) }}
    {{ specgate_sweep | default({}) | specgate_sweep_outcome(specgate_release | default({}),
                                                            specgate_failure | default({}), ansible_check_mode) }}

each give a dict of one-line strings (headline, serving, known_good, reason, ...) the templates lay out.
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils

# As in sglang_config.py: a controller-side plugin puts the project's module_utils on the package path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.common.run_outcome import deploy_outcome, sweep_outcome  # noqa: E402 - path above


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_deploy_outcome": deploy_outcome, "specgate_sweep_outcome": sweep_outcome}
