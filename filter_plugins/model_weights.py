"""Filters: the target's config.json and the deployment → what SGLang would refuse at load (logic in target_limits);
the hub URL of one file of a repo, to read the config before anything is installed."""

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


def model_weights_hub_file_url(repo_id: str, filename: str, revision: str = "", endpoint: str = "") -> str:
    """`{{ repo | model_weights_hub_file_url('config.json', revision, endpoint) }}`: huggingface_hub's own URL of the
    file (hf_hub_url), so a GET from the host reads it before the venv that holds huggingface_hub is installed there."""
    from huggingface_hub import hf_hub_url

    if not repo_id:
        raise AnsibleFilterError("model_weights_hub_file_url: no repo id (model_weights_target_repo is empty)")
    return str(hf_hub_url(repo_id, filename, revision=revision or None, endpoint=endpoint or None))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"model_weights_target_refusal": model_weights_target_refusal,
                "model_weights_hub_file_url": model_weights_hub_file_url}
