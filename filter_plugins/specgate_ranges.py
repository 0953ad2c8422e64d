"""Filter: the first setting of a role that is out of its range, named alone (module_utils/specgate/common/ranges.py).

    {{ _role_ranges | specgate_range_refusal(query('ansible.builtin.vars', *_role_ranges)) }}

gives '' when every variable of ``_role_ranges`` (a role's rules, in its vars/main.yml) is in range, else the one
sentence that names the first that is not, its value and what it must be.
"""

from __future__ import annotations

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.common.ranges import first_range_refusal


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_range_refusal": first_range_refusal}
