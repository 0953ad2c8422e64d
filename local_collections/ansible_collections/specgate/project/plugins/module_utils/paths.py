"""The one place that puts the project's module_utils/ on ansible.module_utils' package path for controller-side code.

Modules get module_utils/ from ansible.cfg when Ansible packages them; controller-side plugins (filters, actions)
import the same logic in-process, where that setting does not apply. Importing this module (found through
ansible.cfg's collections_path, which ansible-runner leaves alone) makes `ansible.module_utils.specgate` importable.
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils

PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parents[6] / "module_utils")
if PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(PROJECT_MODULE_UTILS)
