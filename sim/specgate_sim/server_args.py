"""The sim's answer to `sglang.srt.server_args`: the resolver contract specgate's config check relies on.

specgate's `sglang_config_check` imports a server-args module by name and calls, as for SGLang 0.5.23:
  - `ServerArgs.add_cli_args(parser)`  — to learn the exact option strings,
  - `prepare_server_args(argv)`        — parse, with `--config` merged first (CLI wins),
  - `server_args.resolve_once()`       — resolution; refusals raise with SGLang's own message,
  - `server_args.resolved_dict()`      — the resolved fields.
The demo inventory points `sglang_service_server_args_module` here, so the role never special-cases the sim.

Parsing is the sim's own parser (specgate_sim.args), resolution the sim's (specgate_sim.resolve), plus the
checks SGLang applies after the speculative hook that specgate's presets can trip:
  - trtllm_mla off Blackwell: sglang 0.5.23 srt/arg_groups/overrides.py::_mla_kv_cache_dtype_checks. The sim
    resolves as SGLang does on a host that is not Blackwell (as the CPU peer resolver does).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from specgate_sim import args as sim_args
from specgate_sim import simenv
from specgate_sim.resolve import ResolveError, resolve

# sglang 0.5.23: srt/arg_groups/overrides.py::_mla_kv_cache_dtype_checks
TRTLLM_MLA_OFF_BLACKWELL = (
    "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend."
)
TRTLLM_MLA_KV_DTYPE = "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8_e4m3, bf16, or auto."
# ResolveError messages carry SGLang's exception type as a prefix ("ValueError: ..."); re-raise as that type.
_EXCEPTIONS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "OSError": OSError,
    "AssertionError": AssertionError,
}


def _sim_parser() -> argparse.ArgumentParser:
    return sim_args.build_parser(simenv.from_env().reject_flag)


def _add_cli_args(parser: argparse.ArgumentParser) -> None:
    """Register the sim's flags on `parser`, as `sglang.srt.server_args.ServerArgs.add_cli_args` does."""
    for action in _sim_parser()._actions:
        if any(option in parser._option_string_actions for option in action.option_strings):
            continue  # -h/--help, which every ArgumentParser already has
        parser._add_action(action)


def _field_names() -> list[str]:
    return [action.dest for action in _sim_parser()._actions if action.dest not in ("help", "config")]


def _raise_like_sglang(error: ResolveError) -> None:
    kind, _, message = str(error).partition(": ")
    exception = _EXCEPTIONS.get(kind)
    if exception is None:
        raise ValueError(str(error)) from error
    raise exception(message) from error


def _post_speculative_checks(resolved: dict[str, Any]) -> None:
    if resolved.get("attention_backend") == "trtllm_mla":
        raise ValueError(TRTLLM_MLA_OFF_BLACKWELL)


def _resolve_once(self: Any) -> None:
    if self._resolved is not None:
        return
    namespace = argparse.Namespace(**{name: getattr(self, name) for name in _field_names()})
    try:
        result = resolve(namespace, simenv.from_env())
    except ResolveError as error:
        _raise_like_sglang(error)
    _post_speculative_checks(result.args)
    self._resolved = dict(result.args)


def _resolved_dict(self: Any) -> dict[str, Any]:
    if self._resolved is None:
        raise RuntimeError("resolved_dict() before resolve_once(): nothing has been resolved yet")
    return dict(self._resolved)


ServerArgs = dataclasses.make_dataclass(
    "ServerArgs",
    [(name, Any, dataclasses.field(default=None)) for name in _field_names()]
    + [("_resolved", Any, dataclasses.field(default=None, repr=False))],
    namespace={
        "add_cli_args": staticmethod(_add_cli_args),
        "resolve_once": _resolve_once,
        "resolved_dict": _resolved_dict,
        "__doc__": "Parsed sim server arguments; resolve_once() applies SGLang's checks.",
    },
)


def prepare_server_args(argv: list[str]) -> Any:
    """Parse like `sglang serve`: `--config` YAML merged first (a bad config raises ValueError, as SGLang's
    ConfigArgumentMerger does), then argparse (an unknown flag exits with status 2)."""
    parser = _sim_parser()
    merged = sim_args.merge_config(list(argv), parser)
    namespace = parser.parse_args(merged)
    return ServerArgs(**{name: getattr(namespace, name) for name in _field_names()})
