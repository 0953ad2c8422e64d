"""Filter: a path inside the specgate checkout, from specgate_project_dir (module_utils/specgate/common/project_dir.py).

    {{ specgate_project_dir | default(none) | specgate_project_path('templates/sglang.service.j2') }}

Without specgate_project_dir it fails naming the variable and the fix; in a role's defaults, that failure comes when
the entry point's argument specs are checked, before anything changes.
"""

from __future__ import annotations

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.project_dir import ProjectDirUnset, project_path


def specgate_project_path(project_dir: str | None, relative: str = "") -> str:
    try:
        return project_path(project_dir, relative)
    except ProjectDirUnset as unset:
        raise AnsibleFilterError(str(unset)) from unset


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_project_path": specgate_project_path}
