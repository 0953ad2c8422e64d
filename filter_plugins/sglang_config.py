"""Filters: deployment vars → SGLang `--config` content and engine environment (logic in sglang_flags)."""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.service.service_fit import fit_problems
from ansible.module_utils.specgate.service.sglang_flags import (
    deployment_from,
    deployment_values,
    deployment_var_names,
    engine_env,
    server_config,
)


def sglang_deployment_var_names(defined: list[str]) -> list[str]:
    """`{{ query('ansible.builtin.varnames', '^sglang_service_') | sglang_deployment_var_names }}` → the deployment's
    variable names, in render order (an undefined one is named)."""
    try:
        return deployment_var_names(defined)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_deployment_from(names: list[str], values: list[Any]) -> dict[str, Any]:
    """`{{ names | sglang_deployment_from(query('ansible.builtin.vars', *names)) }}` → the deployment, key → value."""
    try:
        return deployment_from(names, values)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_server_config(deployment: dict[str, Any], sglang_version: str) -> dict[str, Any]:
    """`{{ deployment | sglang_server_config(version) }}` → dict of SGLang flag names (dashes) to values."""
    try:
        return server_config(deployment, sglang_version)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_engine_env(deployment: dict[str, Any], sglang_version: str) -> dict[str, str]:
    """`{{ deployment | sglang_engine_env(version) }}` → environment variables for the engine."""
    try:
        return engine_env(deployment, sglang_version)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_config_refusal(deployment: dict[str, Any], sglang_version: str) -> str:
    """`{{ deployment | sglang_config_refusal(version) }}` → '' when it renders, else the renderer's refusal
    (naming the variable and the fix), for an assert whose failure message is exactly that."""
    try:
        server_config(deployment, sglang_version)
        engine_env(deployment, sglang_version)
    except SglangConfigError as error:
        return str(error)
    return ""


def sglang_deployment_values(deployment: dict[str, Any]) -> dict[str, Any]:
    """`{{ deployment | sglang_deployment_values }}` → the values as the renderer reads them (the specgate_deployment
    fact); the path stand-ins are left out."""
    try:
        values = deployment_values(deployment)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error
    return {key: value for key, value in values.items() if key not in ("model_path", "drafter_path")}


def sglang_fit_refusal(deployment: dict[str, Any], gpu: dict[str, Any]) -> str:
    """`{{ deployment | sglang_fit_refusal(specgate_gpu) }}` → '' when the deployment fits the host's GPUs, else
    every misfit (parallel sizes, attention backends), each naming the variable and the fix."""
    try:
        problems = fit_problems(deployment_values(deployment), gpu or {})
    except SglangConfigError as error:
        return str(error)
    if not problems:
        return ""
    return "the service's settings do not fit this host's GPUs:\n- " + "\n- ".join(problems)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_server_config": sglang_server_config, "sglang_engine_env": sglang_engine_env,
                "sglang_config_refusal": sglang_config_refusal, "sglang_fit_refusal": sglang_fit_refusal,
                "sglang_deployment_values": sglang_deployment_values,
                "sglang_deployment_var_names": sglang_deployment_var_names,
                "sglang_deployment_from": sglang_deployment_from}
