"""Filter: the target's config.json and the deployment → what SGLang would refuse at load (logic in target_limits)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.weights.target_limits import target_refusals


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
