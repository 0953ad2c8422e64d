"""What an engine process loads, reduced to one fingerprint that goes into the release id.

A release is named after its content. The server config and engine env are only part of that content: the
venv's installed distributions (every one, not just the requested pins: a bumped flashinfer-python or
sglang-kernel changes what the engine runs), the patches applied on top of them, and the CUDA toolkit and its
env file load into the same process. Each is inventoried here; the fingerprint is a hash over the inventory,
so any change to what loads is a new release (restart, gate, rollback on failure), and nothing else is.

The inventory of a venv is read by the venv's own interpreter (``INVENTORY_SCRIPT``, run with ``-I`` so the
working directory and PYTHON* variables cannot add distributions the service would not see).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ansible.module_utils.specgate.env.venv_patches import load_state

# Runs inside the inventoried interpreter (any Python >= 3.8): prints {normalized name: {name, version, files,
# source}} for every distribution on its sys.path, the first of a name winning as it does for imports.
# files: a digest of the RECORD lines that carry a hash (the installed files' content as the wheel wrote it;
# .pyc and pip's own bookkeeping lines carry none), so a same-version rebuild is a change too.
# source: the VCS commit or archive hash pip recorded for a direct-URL install (SGLang from a git commit).
INVENTORY_SCRIPT = r"""
import hashlib, importlib.metadata as md, json, re
out = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name:
        continue
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in out:
        continue
    record = dist.read_text("RECORD") or ""
    hashed = sorted(line for line in record.splitlines() if ",sha256=" in line)
    files = hashlib.sha256("\n".join(hashed).encode()).hexdigest()[:16] if hashed else None
    source = None
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            info = json.loads(direct)
        except ValueError:
            info = {}
        source = (info.get("vcs_info") or {}).get("commit_id") or (info.get("archive_info") or {}).get("hash")
    out[key] = {"name": name, "version": dist.version, "files": files, "source": source}
print(json.dumps(out, sort_keys=True))
"""

FINGERPRINT_HEX = 16


def normalize(name: str) -> str:
    """PEP 503 name: ``Flashinfer_Python`` and ``flashinfer-python`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_inventory(text: str) -> dict[str, dict[str, Any]]:
    """INVENTORY_SCRIPT's output, checked: {normalized name: {name, version, files, source}}."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"venv inventory is not a mapping: {text[:200]!r}")
    inventory: dict[str, dict[str, Any]] = {}
    for key, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            raise ValueError(f"venv inventory entry {key!r} has no version: {entry!r}")
        inventory[normalize(key)] = {
            "name": str(entry.get("name") or key),
            "version": entry["version"],
            "files": entry.get("files"),
            "source": entry.get("source"),
        }
    return inventory


def installed_versions(inventory: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """{distribution name: version} for display (engine.json, the fact), sorted by name."""
    return {inventory[key]["name"]: str(inventory[key]["version"]) for key in sorted(inventory)}


def requested_versions(inventory: Mapping[str, Mapping[str, Any]], names: Iterable[str]) -> dict[str, str | None]:
    """The version of each requested name as the user spelled it, None where it is not installed."""
    result: dict[str, str | None] = {}
    for name in names:
        entry = inventory.get(normalize(name))
        result[name] = str(entry["version"]) if entry else None
    return result


def applied_patches(state: Mapping[str, Any]) -> dict[str, str]:
    """{patch name: sha256} from venv_patches' state file: what is applied, not what was asked for."""
    patches = state.get("patches") or {}
    return {name: str(patches[name].get("sha256", "")) for name in sorted(patches)}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def engine_content(
    inventory: Mapping[str, Mapping[str, Any]],
    patches: Mapping[str, str],
    files: Mapping[str, str] | None = None,
    facts: Mapping[str, Any] | None = None,
    *,
    pending: bool = False,
) -> dict[str, Any]:
    """Everything the fingerprint covers: distributions (version, file digest, source), patches, the sha256 of
    each loaded text file (e.g. the CUDA env file), plain facts (e.g. the toolkit version), and ``pending``
    when check mode saw an install or patch still to come (the venv on disk is not what a real run leaves)."""
    content: dict[str, Any] = {
        "distributions": {
            key: {field: inventory[key].get(field) for field in ("version", "files", "source")}
            for key in sorted(inventory)
        },
        "patches": dict(sorted(patches.items())),
        "files": {name: sha256_text(text) for name, text in sorted((files or {}).items())},
        "facts": dict(facts or {}),
    }
    if pending:
        content["pending"] = True
    return content


def fingerprint(content: Mapping[str, Any]) -> str:
    """A short stable hash of the content (key order does not matter)."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_HEX]


def inventory_engine(
    run_command: Callable[[list[str]], tuple[int, str, str]],
    python: str,
    *,
    patch_state_dir: str = "",
    names: Iterable[str] = (),
    files: Mapping[str, Any] | None = None,
    facts: Mapping[str, Any] | None = None,
    pending: bool = False,
) -> dict[str, Any]:
    """The engine_fingerprint module's result, read from the host: the venv's inventory (by its own interpreter),
    the applied patches, the files' digests and the facts. A python that does not exist inventories nothing and
    says present=false (the caller decides whether that is an error). Raises ValueError when the venv cannot say
    what it holds."""
    present = not python or os.path.exists(python)
    inventory: dict[str, dict[str, Any]] = {}
    if python and present:
        rc, out, err = run_command([python, "-I", "-c", INVENTORY_SCRIPT])
        if rc != 0:
            raise ValueError(f"{python} could not list its distributions: {(out + err).strip()}")
        inventory = parse_inventory(out)
    state_dir = Path(patch_state_dir) if patch_state_dir else None
    patches = applied_patches(load_state(state_dir)) if state_dir and state_dir.is_dir() else {}
    content = engine_content(inventory, patches, {name: str(text) for name, text in (files or {}).items()}, facts,
                             pending=pending)  # fmt: skip
    return {
        "present": present,
        "fingerprint": fingerprint(content),
        "installed": installed_versions(inventory),
        "versions": requested_versions(inventory, names) if python and present else {},
        "patches": patches,
        "files": content["files"],
    }
