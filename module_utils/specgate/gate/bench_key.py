"""The server's API key for the benchmark, read on the host from the release's SGLang config (launch.yaml).

The key is read there, as the benchmark's user, instead of travelling in the module's arguments: Ansible leaves an
async task's module file, arguments included, in a temp directory the job cannot remove when it runs as another
user than the one connecting, so a key passed as an argument outlived the benchmark on every host.
"""

from __future__ import annotations

import yaml
from ansible.module_utils.specgate.gate.bench_client import BenchError

SGLANG_KEY = "api-key"  # the key's name in an SGLang --config file


def api_key_from_config(text: str, path: str) -> str:
    """The ``api-key`` of an SGLang config file's ``text`` (read from ``path``, named in errors)."""
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise BenchError(f"{path} is not YAML ({error}); it should be the release's SGLang config") from error
    key = config.get(SGLANG_KEY) if isinstance(config, dict) else None
    if not isinstance(key, str) or not key:
        raise BenchError(
            f"{path} holds no {SGLANG_KEY}: the release was made without sglang_service_api_key, yet its record "
            "says the server needs one; deploy the release again to rewrite it"
        )
    return key


def read_api_key(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return api_key_from_config(f.read(), path)
    except OSError as error:
        raise BenchError(f"cannot read the server's API key from {path}: {error.strerror}") from error
