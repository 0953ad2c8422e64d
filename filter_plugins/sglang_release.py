"""Filters for the sglang_service role: release label, release id, and the identity a release must report.

A label names the speculative settings in sglang_flags.SPEC_KEYS, each by its short form there.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.service.sglang_flags import SPEC_KEYS
from ansible.plugins.filter.core import to_nice_yaml

_LABEL_OK = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

def sglang_release_label(deployment: Mapping[str, Any], label: str | None = None) -> str:
    """A readable name for a release: the user's label, or the speculative settings in short form."""
    if label:
        text = str(label)
        if not _LABEL_OK.match(text):
            raise AnsibleFilterError(
                f"sglang_service_release_label {text!r} must be lowercase letters, digits, '.', '_' or '-' "
                "(at most 64, starting with a letter or digit): it names a directory on the host"
            )
        return text
    algorithm = str(deployment.get("algorithm") or "none")
    if algorithm.lower() == "none":
        return "nospec"
    parts = [algorithm.lower()]
    for key, knob in SPEC_KEYS.items():
        value = deployment.get(key)
        if value is not None:
            parts.append(f"{knob.label}{value}")
    return "-".join(parts)


def sglang_release_id(content: Mapping[str, Any], label: str) -> str:
    """``<label>-<10 hex>``: the hash covers everything that decides how the engine starts, the label does not."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return f"{label}-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"


_ID_DIGEST = re.compile(r"-[0-9a-f]{10}$")


def sglang_release_label_of(release_id: str) -> str:
    """The label a release id was made from (sglang_release_id's ``<label>-<10 hex>``, the digest taken off)."""
    return _ID_DIGEST.sub("", str(release_id))


def sglang_release_content(
    public_config: Mapping[str, Any],
    engine_env: Mapping[str, Any],
    launch_module: str,
    sglang_version: str,
    *,
    sglang_env: Mapping[str, Any] | None = None,
    cuda: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What a release id hashes: how the engine starts (server config, engine env, launch module, SGLang
    version) and what it loads (the fingerprints sglang_env and cuda_toolkit publish over the venv's installed
    set and applied patches, and the toolkit with its env file). A bumped pin, a re-applied patch or a new
    toolkit is a new release; hosts provisioned without a stage contribute an empty fingerprint."""
    return {
        "server": dict(public_config),
        "env": dict(engine_env),
        "launch_module": launch_module,
        "sglang_version": sglang_version,
        "venv": str((sglang_env or {}).get("fingerprint") or ""),
        "cuda": str((cuda or {}).get("fingerprint") or ""),
    }


def sglang_engine_record(
    sglang_env: Mapping[str, Any] | None = None, cuda: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """engine.json of a release: what went into the id's fingerprints, readable (and diffable with --diff)."""
    sglang_env, cuda = sglang_env or {}, cuda or {}
    return {
        "venv": {
            "path": sglang_env.get("venv", ""),
            "fingerprint": str(sglang_env.get("fingerprint") or ""),
            "installed": dict(sorted((sglang_env.get("installed") or {}).items())),
            "patches": dict(sorted((sglang_env.get("patches") or {}).items())),
        },
        "cuda": {
            "version": cuda.get("version", ""),
            "env_file": cuda.get("env_file", ""),
            "fingerprint": str(cuda.get("fingerprint") or ""),
            "installed": dict(sorted((cuda.get("installed") or {}).items())),
        },
    }


def sglang_public_config(server_config: Mapping[str, Any], secret_flags: list[str]) -> dict[str, Any]:
    """The server config without secrets: what server.yaml holds, what diffs and the release id see."""
    secrets = {flag.replace("_", "-") for flag in secret_flags}
    return {flag: value for flag, value in server_config.items() if flag.replace("_", "-") not in secrets}


def sglang_launch_yaml(public_config: Mapping[str, Any], api_key: str | None) -> str:
    """launch.yaml, the config the engine starts from: the release's public server config plus the API key.

    One statement for every writer (a new release, a rollback's restore of known-good onto the current key), so the
    same config and key always give the same bytes and a rewrite changes nothing unless the key did.
    """
    launch = dict(public_config)
    if api_key is not None:
        launch["api-key"] = api_key
    return to_nice_yaml(launch, indent=2, sort_keys=False)


def sglang_identity(
    public_config: Mapping[str, Any], resolved: Mapping[str, Any] | None, ignore: list[str] | None = None
) -> dict[str, Any]:
    """Settings /server_info must report once the release serves, keyed by SGLang's field names.

    Where SGLang's resolver normalised a value (``128k`` → 131072, ``NEXTN`` → ``EAGLE``) the resolved
    value is what the server reports, so it wins over the rendered one.
    """
    skip = {name.replace("-", "_") for name in ignore or []}
    resolved = resolved or {}
    identity = {}
    for flag, value in public_config.items():
        field = flag.replace("-", "_")
        if field in skip:
            continue
        identity[field] = resolved.get(field, value)
    return identity


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "sglang_release_label": sglang_release_label,
            "sglang_release_id": sglang_release_id,
            "sglang_release_label_of": sglang_release_label_of,
            "sglang_release_content": sglang_release_content,
            "sglang_engine_record": sglang_engine_record,
            "sglang_public_config": sglang_public_config,
            "sglang_launch_yaml": sglang_launch_yaml,
            "sglang_identity": sglang_identity,
        }
