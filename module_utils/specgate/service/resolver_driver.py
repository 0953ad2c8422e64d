"""Ask an SGLang install whether `--config` files would start: its own parser, resolution and launcher checks.

Runs with the engine venv's Python on the host (or in the CPU resolver venv in tests), standard library only
plus whatever the server-args module imports. It is a script: `sglang_config_check` writes this file to a
temporary path and runs `python resolver_driver.py REQUEST.json RESULT.json`.

REQUEST: {"server_args_module": "sglang.srt.server_args",
          "cases": [{"id": "...", "config": "/path.yaml", "extra_argv": [...], "env": {...}}, ...]}
RESULT:  {"server_args_module": ..., "results": [{"id", "ok", "resolved", "error", "unknown_keys", "stage",
                                                  "launcher_checks"}, ...]}

Per case, in the order `sglang serve` runs them before any process loads weights:
  1. parse (`prepare_server_args`; 0.5.11/0.5.15 resolve inside it, in `ServerArgs.__post_init__`),
  2. resolve (`resolve_once()`, 0.5.19+),
  3. the launcher's checks (see `launcher_checks`): what `Engine._launch_subprocesses` runs after resolution and
     before it spawns the schedulers (sglang 0.5.23: srt/entrypoints/engine.py), then what the schedulers build
     before loading weights: the model configs and, for DFLASH, the strict draft-config parse that resolution
     only warns about (srt/model_executor/model_runner_components/spec_aux_hidden_state.py).
`stage` names the step that refused ("parse", "resolve" or "launcher:<check>"); `launcher_checks` lists the
checks that ran, so a version that renamed one shows up in the peer tests instead of passing unchecked.

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


# DFLASH-family algorithms whose worker parses the drafter's config strictly (sglang 0.5.23:
# srt/speculative/spec_info.py::is_dflash_family; DDTREE is sgl-project/sglang#29907's, built on DFLASH).
_DFLASH_FAMILY = frozenset({"DFLASH", "DDTREE"})


class LauncherRefusal(Exception):
    """One of the launcher's checks refused the config; `check` names it."""

    def __init__(self, check: str, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        self.check = check


def _sglang_package(module: Any) -> str | None:
    """`sglang` for `sglang.srt.server_args`; None for a server-args module that is not SGLang's (the sim)."""
    name = module.__name__
    return name.removesuffix(".srt.server_args") if name.endswith(".srt.server_args") else None


def _run(check: str, ran: list[str], call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        value = call(*args, **kwargs)
    except Exception as error:  # SGLang's launcher checks raise ValueError or fail an assert
        raise LauncherRefusal(check, error) from error
    ran.append(check)
    return value


def _resolved_value(server_args: Any, resolved: dict[str, Any], name: str) -> Any:
    return resolved[name] if name in resolved else getattr(server_args, name, None)


def _builds_eagle_draft_config(package: str, algorithm: str) -> bool:
    """Whether the target's model runner builds the drafter's model config for ``algorithm``, asked of SGLang's own
    predicates (0.5.23 spec_aux_hidden_state.py::_resolve_eagle_aux_hidden_state: is_eagle() or is_standalone(),
    that is EAGLE, EAGLE3, FROZEN_KV_MTP and STANDALONE). False where the version has no such predicates."""
    spec_info = _optional_import(f"{package}.srt.speculative.spec_info")
    algorithms = getattr(spec_info, "SpeculativeAlgorithm", None)
    if not algorithm or algorithms is None or not hasattr(algorithms, "from_string"):
        return False
    try:
        found = algorithms.from_string(algorithm)
    except (KeyError, ValueError):
        return False
    predicates = [getattr(found, name, None) for name in ("is_eagle", "is_standalone")]
    return any(callable(predicate) and predicate() for predicate in predicates)


def _draft_checks(package: str, server_args: Any, resolved: dict[str, Any], ran: list[str]) -> None:
    """What the target's model runner does with the drafter before loading weights (sglang 0.5.23:
    srt/model_executor/model_runner_components/spec_aux_hidden_state.py, _resolve_dflash_aux_hidden_state and
    _resolve_eagle_aux_hidden_state; 0.5.11: srt/model_executor/model_runner.py): build both model configs (the
    drafter's with the served context: a drafter shorter than it is refused), and for DFLASH parse the draft config
    strictly (srt/speculative/dflash_utils.py::parse_dflash_draft_config), require its layer count and resolve the
    target layer ids against the target's layers. Resolution only warns on a malformed draft config."""
    model_config = importlib.import_module(f"{package}.srt.configs.model_config").ModelConfig
    target = _run("model_config", ran, model_config.from_server_args, server_args)
    algorithm = str(_resolved_value(server_args, resolved, "speculative_algorithm") or "").upper()
    draft_path = _resolved_value(server_args, resolved, "speculative_draft_model_path")
    dflash = algorithm in _DFLASH_FAMILY
    # A path-less EAGLE (NEXTN/MTP) drafts with the target's own layers: its config is the target's, judged above.
    if not (dflash or (draft_path and _builds_eagle_draft_config(package, algorithm))):
        return
    draft = _run("draft_model_config", ran, model_config.from_server_args, server_args,
                 model_path=draft_path,
                 model_revision=_resolved_value(server_args, resolved, "speculative_draft_model_revision"),
                 is_draft_model=True)
    if not dflash:
        return
    dflash_utils = importlib.import_module(f"{package}.srt.speculative.dflash_utils")

    def strict_parse() -> None:
        parsed = dflash_utils.parse_dflash_draft_config(draft_hf_config=draft.hf_config)
        draft_layers = parsed.require_num_layers()
        text_config = getattr(target, "hf_text_config", target.hf_config)
        target_layers = getattr(text_config, "num_hidden_layers", None)
        if target_layers is None:
            raise ValueError("DFLASH requires target num_hidden_layers in config. Got target=None.")
        target_layers = int(target_layers) * int(getattr(text_config, "num_loops", 1) or 1)
        parsed.resolve_target_layer_ids(target_num_layers=target_layers, draft_num_layers=int(draft_layers))

    _run("dflash_draft_config", ran, strict_parse)


# Where the launcher imports resolve_auto_parsers from (sglang 0.5.19+: srt/parser/template_detection.py;
# 0.5.15: srt/managers/template_detection.py; 0.5.11 has none).
_AUTO_PARSER_MODULES = ("srt.parser.template_detection", "srt.managers.template_detection")


def _optional_import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and name.startswith(error.name):
            return None  # this version has no such module
        raise


def launcher_checks(module: Any, server_args: Any, resolved: dict[str, Any]) -> list[str]:
    """Run what `sglang serve` runs after resolution and before any process loads weights; the checks that ran.

    In the launcher's order (sglang 0.5.11-0.5.23: srt/entrypoints/engine.py, `Engine._launch_subprocesses`):
    `load_plugins` (srt/plugins), `server_args.check_server_args()` (0.5.23: srt/arg_groups/validation_hook.py;
    0.5.11/0.5.15: srt/server_args.py), `resolve_auto_parsers` when a parser is "auto"; then what the schedulers
    build before loading weights: the model configs (the drafter's too for DFLASH and a path-given EAGLE)
    and, for DFLASH, the strict draft-config parse.
    Not run: `_set_envs_and_config` (it refuses only on installed kernel versions, flashinfer_python and
    sglang-kernel: the install sglang_env pins, not the config; importing the engine module needs the whole serving
    stack), port allocation and process spawning (the service stage checks its port itself).
    A server-args module that is not SGLang's (the sim) runs only the `check_server_args` it defines, if any.
    Raises LauncherRefusal naming the check that refused.
    """
    ran: list[str] = []
    package = _sglang_package(module)
    plugins = _optional_import(f"{package}.srt.plugins") if package else None
    if plugins is not None and hasattr(plugins, "load_plugins"):
        _run("load_plugins", ran, plugins.load_plugins)
    if callable(getattr(server_args, "check_server_args", None)):
        _run("check_server_args", ran, server_args.check_server_args)
    parsers = (_resolved_value(server_args, resolved, "reasoning_parser"),
               _resolved_value(server_args, resolved, "tool_call_parser"))
    if package is not None and "auto" in parsers:
        for name in _AUTO_PARSER_MODULES:
            detection = _optional_import(f"{package}.{name}")
            if detection is not None and hasattr(detection, "resolve_auto_parsers"):
                _run("resolve_auto_parsers", ran, detection.resolve_auto_parsers, server_args)
                break
    if package is not None:
        _draft_checks(package, server_args, resolved, ran)
    return ran


def resolve_case(module: Any, options: set[str], case: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"id": case.get("id"), "ok": False, "resolved": None, "error": None, "unknown_keys": [],
                              "stage": None, "launcher_checks": []}
    unknown = inexact_keys(config_keys(case["config"]), options)
    if unknown:
        result["unknown_keys"] = unknown
        result["error"] = (
            f"config keys {unknown} are not option strings of {module.__name__}'s parser (argparse would accept a "
            "unique prefix of a flag silently); write every key as the full flag name with dashes"
        )
        result["stage"] = "parse"
        return result
    argv = ["--config", case["config"], *[str(arg) for arg in case.get("extra_argv", [])]]
    stderr = io.StringIO()
    stage = "parse"
    try:
        with environment(case.get("env") or {}), contextlib.redirect_stderr(stderr):
            server_args = module.prepare_server_args(argv)
            stage = "resolve"
            resolve = getattr(server_args, "resolve_once", None)
            if callable(resolve):
                resolve()
            resolved = resolved_fields(server_args)
            stage = "launcher"
            result["launcher_checks"] = launcher_checks(module, server_args, resolved)
    except SystemExit:
        # argparse reports a bad flag or value on stderr and exits; its last line is the message.
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        result["error"] = lines[-1] if lines else "the argument parser exited without a message"
        result["stage"] = stage
        return result
    except LauncherRefusal as refusal:
        result["error"] = str(refusal)
        result["stage"] = f"launcher:{refusal.check}"
        return result
    except Exception as error:  # any failure of SGLang's parsing or resolution is the answer we report
        result["error"] = f"{type(error).__name__}: {error}"
        result["stage"] = stage
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
