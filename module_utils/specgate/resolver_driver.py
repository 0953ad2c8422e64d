"""Ask an SGLang install's own argument resolver whether `--config` files are valid.

Runs with the engine venv's Python on the host (or in the CPU resolver venv in tests), standard library only
plus whatever the server-args module imports. It is a script: `sglang_config_check` writes this file to a
temporary path and runs `python resolver_driver.py REQUEST.json RESULT.json`.

REQUEST: {"server_args_module": "sglang.srt.server_args",
          "cases": [{"id": "...", "config": "/path.yaml", "extra_argv": [...], "env": {...}}, ...]}
RESULT:  {"server_args_module": ..., "results": [{"id", "ok", "resolved", "error", "unknown_keys"}, ...]}

One process resolves many cases: importing SGLang costs seconds, resolving one argv about a second.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import importlib
import io
import json
import math
import os
import re
import sys
from typing import Any

# Fields whose values never leave the process (resolved dicts end up in Ansible output and logs):
# api_key, admin_api_key, watermark_key, hf_token... but not speculative_num_draft_tokens.
_SECRET_FIELD = re.compile(r"(^|_)(key|token|secret|password)$", re.IGNORECASE)
# A local weights directory never needs the hub; an unreachable hub would turn a typo into a long hang.
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def option_strings(module: Any) -> set[str]:
    """Every option string the version's own parser accepts, built the way prepare_server_args builds it."""
    parser = argparse.ArgumentParser(prog="sglang serve")
    module.ServerArgs.add_cli_args(parser)
    return set(parser._option_string_actions)


def config_keys(path: str) -> list[str]:
    """Top-level keys of a `--config` YAML file; [] when it cannot be read (SGLang reports that itself)."""
    try:
        import yaml

        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, ImportError, ValueError):
        return []
    except Exception:  # a YAML syntax error: SGLang's loader reports it in its own words
        return []
    return [str(key) for key in data] if isinstance(data, dict) else []


def inexact_keys(keys: list[str], options: set[str]) -> list[str]:
    """Keys that are not an exact option string: argparse's allow_abbrev would take a unique prefix silently."""
    return [key for key in keys if f"--{key}" not in options]


def json_safe(value: Any) -> Any:
    """Resolved values as JSON: enums by value, records as dicts, anything else exotic as its str()."""
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_safe(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return str(value)


def mask_secrets(resolved: dict[str, Any]) -> dict[str, Any]:
    return {
        name: ("********" if value is not None and _SECRET_FIELD.search(name) else value)
        for name, value in resolved.items()
    }


def resolved_fields(server_args: Any) -> dict[str, Any]:
    """What resolution decided: `resolved_dict()` where the version has it (0.5.19+), else the dataclass."""
    if hasattr(server_args, "resolved_dict"):
        return server_args.resolved_dict()
    if dataclasses.is_dataclass(server_args):
        return {field.name: getattr(server_args, field.name) for field in dataclasses.fields(server_args)}
    return dict(vars(server_args))


@contextlib.contextmanager
def environment(env: dict[str, str]):
    saved = dict(os.environ)
    os.environ.update({**_OFFLINE_ENV, **{str(k): str(v) for k, v in env.items()}})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def resolve_case(module: Any, options: set[str], case: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"id": case.get("id"), "ok": False, "resolved": None, "error": None, "unknown_keys": []}
    unknown = inexact_keys(config_keys(case["config"]), options)
    if unknown:
        result["unknown_keys"] = unknown
        result["error"] = (
            f"config keys {unknown} are not option strings of {module.__name__}'s parser (argparse would accept a "
            "unique prefix of a flag silently); write every key as the full flag name with dashes"
        )
        return result
    argv = ["--config", case["config"], *[str(arg) for arg in case.get("extra_argv", [])]]
    stderr = io.StringIO()
    try:
        with environment(case.get("env") or {}), contextlib.redirect_stderr(stderr):
            server_args = module.prepare_server_args(argv)
            resolve = getattr(server_args, "resolve_once", None)
            if callable(resolve):
                resolve()
            resolved = resolved_fields(server_args)
    except SystemExit:
        # argparse reports a bad flag or value on stderr and exits; its last line is the message.
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        result["error"] = lines[-1] if lines else "the argument parser exited without a message"
        return result
    except Exception as error:  # any failure of SGLang's resolution is the answer we report
        result["error"] = f"{type(error).__name__}: {error}"
        return result
    result["ok"] = True
    result["resolved"] = mask_secrets(json_safe(resolved))
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: resolver_driver.py REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        request = json.load(handle)
    module_name = request.get("server_args_module") or "sglang.srt.server_args"
    module = importlib.import_module(module_name)
    options = option_strings(module)
    results = [resolve_case(module, options, case) for case in request["cases"]]
    answer: dict[str, Any] = {"server_args_module": module_name, "results": results}
    if request.get("want_option_strings"):
        answer["option_strings"] = sorted(options)
    with open(argv[1], "w", encoding="utf-8") as handle:
        json.dump(answer, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
