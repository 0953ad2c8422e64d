"""Action: warn when a secret's value was given on ansible-playbook's command line (`-e name=value`).

Runs on the controller, in a worker forked from ansible-playbook, whose argv is the user's command line: the one
place the process list shows. Documentation: library/specgate_secrets_on_command_line.py.
"""

from __future__ import annotations

import sys

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.common.secret_exposure import (
    exposure_warning,
    secrets_on_command_line,
)
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"names"})

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        names = self._task.args.get("names") or []
        secrets = {name: self._templar.template(task_vars[name]) for name in names if task_vars.get(name) is not None}
        exposed = secrets_on_command_line(sys.argv, secrets)
        result.update(changed=False, exposed=exposed)
        if exposed:
            result["warnings"] = [exposure_warning(exposed)]
        return result
