"""Make the project's module_utils importable as Ansible sees them: ansible.module_utils.specgate.*."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import ansible.module_utils

PROJECT_ROOT = Path(__file__).resolve().parent.parent

_project_module_utils = str(PROJECT_ROOT / "module_utils")
if _project_module_utils not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_project_module_utils)
for extra in (PROJECT_ROOT / "library", PROJECT_ROOT / "filter_plugins"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

# ansible-runner and molecule find ansible-playbook/ansible-inventory on PATH: make it the venv's, also
# when pytest is started as .venv/bin/pytest without the venv activated.
_venv_bin = str(Path(sys.executable).parent)
if _venv_bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _venv_bin + os.pathsep + os.environ.get("PATH", "")
