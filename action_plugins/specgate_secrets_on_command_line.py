"""Action: warn when a secret's value was given on ansible-playbook's command line (`-e name=value`).

Runs on the controller, in a worker forked from ansible-playbook, whose argv is the user's command line: the one
place the process list shows. Documentation: library/specgate_secrets_on_command_line.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ansible.module_utils
from ansible.plugins.action import ActionBase

# Same reason as filter_plugins/sglang_config.py: a controller-side plugin puts module_utils on the path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.common.secret_exposure import (  # noqa: E402 - needs the path set above
    exposure_warning,
    secrets_on_command_line,
)


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
