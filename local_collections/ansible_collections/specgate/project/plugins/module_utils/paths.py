"""The one place that puts the project's module_utils/ on ansible.module_utils' package path for controller-side code.

Modules get module_utils/ from ansible.cfg when Ansible packages them; controller-side plugins (filters, actions)
import the same logic in-process, where that setting does not apply. Importing this module (found through
ansible.cfg's collections_path, which ansible-runner leaves alone) makes `ansible.module_utils.specgate` importable:

    import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path

Python run outside Ansible (scripts/bench_*.py, tests/conftest.py, the gate scenario's testinfra tests) has no
collection loader: it puts local_collections/ on sys.path first, and the same import finds this file there
(`ansible_collections` is then a plain namespace package; ansible-core ships none of its own).
"""

from __future__ import annotations

from pathlib import Path

import ansible.module_utils

PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parents[6] / "module_utils")
if PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(PROJECT_MODULE_UTILS)
