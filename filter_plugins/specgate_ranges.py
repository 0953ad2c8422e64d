"""Filter: the first setting of a role that is out of its range, named alone (module_utils/specgate/common/ranges.py).

    {{ _role_ranges | specgate_range_refusal(query('ansible.builtin.vars', *_role_ranges)) }}

gives '' when every variable of ``_role_ranges`` (a role's rules, in its vars/main.yml) is in range, else the one
sentence that names the first that is not, its value and what it must be.
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils

# As in sglang_config.py: a controller-side plugin puts the project's module_utils on the package path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.common.ranges import first_range_refusal  # noqa: E402 - needs the path set above


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_range_refusal": first_range_refusal}
