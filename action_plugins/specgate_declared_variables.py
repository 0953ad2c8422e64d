"""Action: refuse the play's variables meant for the running role that it does not declare (variable_names).

Runs on the controller: it reads the play's variable names, which a module on the host never sees, and the
running role's own meta/argument_specs.yml. Documentation: library/specgate_declared_variables.py.
"""

from __future__ import annotations

from pathlib import Path

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils.specgate.common.variable_names import role_refusal
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset()

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        role = self._task._role
        if role is None:
            raise AnsibleActionFail("specgate_declared_variables runs inside a role: it checks that role's variables")
        role_path = Path(role._role_path)
        spec = yaml.safe_load((role_path / "meta" / "argument_specs.yml").read_text()) or {}
        # The other stages' names (the roles beside this one), so a name with their prefix is left to them.
        siblings = sorted(p.name for p in role_path.parent.iterdir() if (p / "meta").is_dir())
        allowed = task_vars.get("specgate_allowed_variables") or []
        message = role_refusal(task_vars.keys(), role.get_name(), spec, siblings, allowed=allowed)
        result["changed"] = False
        if message:
            result["failed"] = True
            result["msg"] = message
        return result
