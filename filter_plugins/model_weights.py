"""Filter: the target's config.json and the deployment → what SGLang would refuse at load (logic in target_limits)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.errors import AnsibleFilterError

# Same reason as sglang_config.py: a controller-side plugin puts the project's module_utils on the path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.weights.target_limits import target_refusals  # noqa: E402 - needs the path set above


def model_weights_target_refusal(config: Mapping[str, Any], deployment: Mapping[str, Any]) -> str:
    """`{{ target_config | model_weights_target_refusal(model_weights_deployment) }}` → '' or the refusals."""
    if not isinstance(config, Mapping):
        raise AnsibleFilterError("model_weights_target_refusal: the target's config.json is not a JSON object")
    try:
        found = target_refusals(config, deployment.get("context_length"), deployment.get("tp_size"),
                                deployment.get("attn_dp_size"), deployment.get("engine_env") or {})
    except ValueError as error:
        raise AnsibleFilterError(f"model_weights_target_refusal: {error}") from error
    return "; ".join(found)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"model_weights_target_refusal": model_weights_target_refusal}
