"""Filter: whether the venv's installed SGLang is the engine sglang_env's plan published (module_utils
specgate/env/pins.py install_refusal).

    {{ installed_version | sglang_env_install_refusal(specgate_engine) }}

gives '' when it is, else the one sentence naming the variable to fix.
"""

from __future__ import annotations

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.env.pins import install_refusal


class FilterModule:
    def filters(self) -> dict:
        return {"sglang_env_install_refusal": install_refusal}
