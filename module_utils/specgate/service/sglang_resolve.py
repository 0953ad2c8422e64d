"""Check a rendered `--config` with the host's own SGLang (parser, resolver, launcher checks), via resolver_driver.py.

The driver runs under the engine venv's Python (SGLang is not importable by the module's interpreter), so it
is written to a private temporary directory and run as a script; its answer comes back as a JSON file.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.service import resolver_driver

DEFAULT_SERVER_ARGS_MODULE = "sglang.srt.server_args"
# Import ~5 s plus resolution ~2 s on a workstation; a loaded host or a slow filesystem gets ample room.
DEFAULT_TIMEOUT_S = 300
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
_STDERR_TAIL = 2000


class ResolverUnavailable(RuntimeError):
    """The resolver could not give an answer (no interpreter, SGLang not importable, a crash)."""


@dataclass
class CheckResult:
    rejected: bool
    message: str
    resolved: dict[str, Any] | None = None
    unknown_keys: list[str] = field(default_factory=list)
    # "parse", "resolve" or "launcher:<check>" when rejected (resolver_driver.resolve_case); None when accepted.
    stage: str | None = None
    # The launcher's checks that ran (resolver_driver.launcher_checks), in order.
    launcher_checks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rejected": self.rejected,
            "message": self.message,
            "resolved": self.resolved,
            "unknown_keys": self.unknown_keys,
            "stage": self.stage,
            "launcher_checks": self.launcher_checks,
        }


def mask_environment(environment: dict[str, Any]) -> dict[str, str]:
    """The environment as it may be shown: values of names like *KEY*, *TOKEN*, *SECRET*, *PASSWORD* hidden."""
    return {name: ("********" if _SECRET_NAME.search(name) else str(value)) for name, value in environment.items()}


def validate_inputs(python: str, config: str, environment: Any, extra_argv: Any) -> None:
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise ResolverUnavailable(f"python: {python} is not an executable interpreter (the engine venv's python)")
    if not os.path.isfile(config):
        raise ResolverUnavailable(f"config: {config} does not exist (render the release's server config first)")
    if not isinstance(environment, dict):
        raise ResolverUnavailable("environment must be a mapping of variable name to value")
    if not isinstance(extra_argv, list) or not all(isinstance(arg, str) for arg in extra_argv):
        raise ResolverUnavailable("extra_argv must be a list of strings")


def build_request(config: str, environment: dict[str, Any], server_args_module: str,
                  extra_argv: list[str]) -> dict[str, Any]:
    return {
        "server_args_module": server_args_module,
        "cases": [{
            "id": "candidate",
            "config": config,
            "extra_argv": list(extra_argv),
            "env": {str(k): str(v) for k, v in environment.items()},
        }],
    }


def interpret(answer: dict[str, Any]) -> CheckResult:
    """The driver's answer for the one candidate → accepted (with what SGLang resolved) or rejected."""
    results = answer.get("results") or []
    if len(results) != 1:
        raise ResolverUnavailable(f"the resolver answered {len(results)} results for one config")
    return interpret_result(results[0])


def interpret_result(result: dict[str, Any]) -> CheckResult:
    """One case of the driver's answer → accepted (with what SGLang resolved) or rejected."""
    checks = list(result.get("launcher_checks") or [])
    if result.get("ok"):
        return CheckResult(rejected=False, message="SGLang's parser, resolver and launcher checks accept the config",
                           resolved=result.get("resolved") or {}, launcher_checks=checks)
    return CheckResult(rejected=True, message=str(result.get("error") or "rejected without a message"),
                       unknown_keys=list(result.get("unknown_keys") or []), stage=result.get("stage"),
                       launcher_checks=checks)


Runner = Callable[..., subprocess.CompletedProcess]


def run_driver(python: str, request: dict[str, Any], timeout: int, runner: Runner = subprocess.run) -> dict[str, Any]:
    """Write the driver and the request to a private temp dir, run the driver with `python`, read its answer."""
    source = inspect.getsource(resolver_driver)
    with tempfile.TemporaryDirectory(prefix="specgate-resolve-") as work:
        driver = os.path.join(work, "resolver_driver.py")
        request_file = os.path.join(work, "request.json")
        result_file = os.path.join(work, "result.json")
        with open(driver, "w", encoding="utf-8") as handle:
            handle.write(source)
        with open(request_file, "w", encoding="utf-8") as handle:
            json.dump(request, handle)
        # The temp dir is the cwd so nothing in the caller's cwd shadows SGLang's imports.
        try:
            completed = runner([python, driver, request_file, result_file], cwd=work, capture_output=True,
                               text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as error:
            raise ResolverUnavailable(f"the resolver did not answer within {timeout} s") from error
        if completed.returncode != 0 or not os.path.exists(result_file):
            tail = (completed.stderr or "")[-_STDERR_TAIL:].strip()
            raise ResolverUnavailable(
                f"the resolver exited with status {completed.returncode} under {python}; stderr tail:\n{tail}"
            )
        with open(result_file, encoding="utf-8") as handle:
            return json.load(handle)


def check_config(python: str, config: str, environment: dict[str, Any] | None = None, *,
                 server_args_module: str = DEFAULT_SERVER_ARGS_MODULE, extra_argv: list[str] | None = None,
                 timeout: int = DEFAULT_TIMEOUT_S, runner: Runner = subprocess.run) -> CheckResult:
    environment = environment or {}
    extra_argv = extra_argv or []
    validate_inputs(python, config, environment, extra_argv)
    request = build_request(config, environment, server_args_module, extra_argv)
    return interpret(run_driver(python, request, timeout, runner))


def check_configs(python: str, cases: list[tuple[str, str, dict[str, Any]]], *,
                  server_args_module: str = DEFAULT_SERVER_ARGS_MODULE, extra_argv: list[str] | None = None,
                  timeout: int = DEFAULT_TIMEOUT_S, runner: Runner = subprocess.run) -> dict[str, CheckResult]:
    """Several configs in one run of the driver (SGLang imported once): ``cases`` are (name, config path,
    environment); the answer per name, in order. A rejection is an answer, not an error."""
    extra_argv = extra_argv or []
    names = [name for name, _config, _env in cases]
    if len(set(names)) != len(names):
        raise ResolverUnavailable(f"config names repeat: {names}")
    for _name, config, environment in cases:
        validate_inputs(python, config, environment, extra_argv)
    request = {"server_args_module": server_args_module,
               "cases": [{"id": name, "config": config, "extra_argv": list(extra_argv),
                          "env": {str(k): str(v) for k, v in environment.items()}}
                         for name, config, environment in cases]}  # fmt: skip
    results = run_driver(python, request, timeout, runner).get("results") or []
    if len(results) != len(cases):
        raise ResolverUnavailable(f"the resolver answered {len(results)} results for {len(cases)} configs")
    return {name: interpret_result(result) for name, result in zip(names, results, strict=True)}
