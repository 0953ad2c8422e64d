"""Make the project's module_utils importable as Ansible sees them: ansible.module_utils.specgate.*."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# local_collections/: the project's collection, whose paths module puts module_utils on ansible.module_utils' path
# (the controller-side plugins the tests import do the same).
for extra in (PROJECT_ROOT / "local_collections", PROJECT_ROOT / "library", PROJECT_ROOT / "filter_plugins"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path

# ansible-runner and molecule find ansible-playbook/ansible-inventory on PATH: make it the venv's, also
# when pytest is started as .venv/bin/pytest without the venv activated.
_venv_bin = str(Path(sys.executable).parent)
if _venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _venv_bin + os.pathsep + os.environ.get("PATH", "")
