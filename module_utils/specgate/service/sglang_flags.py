"""Translate a deployment (in the user's words) into SGLang's `--config` YAML content and engine environment.

Flag spellings change between SGLang releases (shared docs: sglang-reference.md, "Flag history that bites"),
so every rendering is for one named SGLang version, read from the engine-version catalog
(module_utils/specgate/common/engine.py: VERSION_RULES, parse_sglang_version). DDTREE is rendered only for an
install that carries the DDTree pull request (`0.5.23+ddtree`), because no SGLang release knows it.

Errors name the `sglang_service_*` variable to change; they are raised as `SglangConfigError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import InvalidOperation
from typing import Any

from ansible.module_utils.common.validation import (
    check_type_bool,
    check_type_dict,
    check_type_float,
    check_type_int,
    check_type_str,
)
from ansible.module_utils.specgate.common.engine import (
    SglangConfigError,
    SglangTarget,
    human_readable_int,
    parse_sglang_version,
)
from ansible.module_utils.specgate.service.deployment_schema import DEPLOYMENT_TYPES

VAR_PREFIX = "sglang_service_"

# Deployment keys, in the order their flags are rendered (a stable order keeps a release's server.yaml and launch.yaml
# the same from one specgate version to the next; the release id hashes sorted keys), and each key's type as the
# sglang_service role's meta/argument_specs.yml declares its variable: deployment_schema.py is generated from the role
# (scripts/gen_deployment_schema.py), never restated here.
DEPLOYMENT_KEYS = tuple(DEPLOYMENT_TYPES)

ALGORITHMS = ("none", "DFLASH", "DDTREE", "EAGLE3", "NEXTN")
DFLASH_FAMILY = ("DFLASH", "DDTREE")
EAGLE_FAMILY = ("EAGLE3", "NEXTN")


@dataclass(frozen=True)
class SpecKnob:
    """A speculative setting: the algorithms it applies to, its short form in a release's label (bs16), and where the
    sweep names it otherwise than by its key, its grid axis (the field notes' budget, topk, window) and the prefix of
    its value in a plot's legend (default: the axis and a space)."""

    applies_to: tuple[str, ...]
    label: str
    axis: str | None = None
    legend: str | None = None


# Keys that only mean something for some algorithms, in the order a release's label names them, as the field notes
# wrote labels (dflash-bs16-b32-t8: block size, budget, top-k).
SPEC_KEYS = {
    "block_size": SpecKnob(DFLASH_FAMILY, "bs", legend="bs"),
    "ddtree_budget": SpecKnob(("DDTREE",), "b", axis="budget"),
    "ddtree_topk": SpecKnob(("DDTREE",), "t", axis="topk", legend="top-k "),
    "num_steps": SpecKnob(EAGLE_FAMILY, "s"),
    "eagle_topk": SpecKnob(EAGLE_FAMILY, "k"),
    # DDTREE sizes its verify width from the budget (budget + 1), so draft tokens are not a DDTREE knob.
    "num_draft_tokens": SpecKnob(("DFLASH", *EAGLE_FAMILY), "n"),
    "draft_window": SpecKnob(DFLASH_FAMILY, "w", axis="window"),
}
# drafter_path/_revision (from the model_weights facts) and draft_attention_backend (a hardware choice, set by
# the parallel presets) are not in SPEC_KEYS: they hold whatever the profile, and "none" just does not render them.

# Keys that render with another key's group (_GROUPS, below): the speculative knobs and the drafter with the algorithm,
# the attention-DP width with dp_size, the graph batch size with cuda_graph. extra_args renders last, on its own.
_GROUPED = {*SPEC_KEYS, "drafter_path", "drafter_revision", "draft_attention_backend", "attn_dp_size",
            "cuda_graph_max_bs"}

# The renderer coerces each value with Ansible's own type checks, as argument_specs do, so what preflight judged is what
# renders: `-e sglang_service_block_size=16` arrives as the string "16" and renders as 16. context_length's type is
# raw: an integer, or SGLang's short form (128k), read by SGLang's own rule (see human_readable_int).
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "int": check_type_int,
    "bool": check_type_bool,
    "float": check_type_float,
    "str": check_type_str,
    "path": check_type_str,
    "dict": check_type_dict,
}
_TYPE_WORDS = {"int": "an integer", "bool": "true or false", "float": "a number", "str": "a string",
               "path": "a path", "dict": "a mapping"}
# Integers SGLang needs at least 1 of; chunked_prefill_size -1 means "no chunking" to SGLang, random_seed 0 is a seed.
_POSITIVE_INTS = (
    *(k for k, t in DEPLOYMENT_TYPES.items() if t == "int" and k not in ("chunked_prefill_size", "random_seed")),
    "context_length",
)
_FLAG_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
def var(key: str) -> str:
    """The user-facing variable name of a deployment key."""
    return VAR_PREFIX + key


def deployment_var_names(defined: Iterable[str]) -> list[str]:
    """The deployment's variable names, in render order, from the names Ansible has defined (the role's defaults
    define every one: a missing one is a role that lost a default, named here rather than read as null)."""
    names = [var(key) for key in DEPLOYMENT_KEYS]
    missing = sorted(set(names) - set(defined))
    if missing:
        raise SglangConfigError(
            f"{', '.join(missing)} undefined: roles/sglang_service/defaults/main.yml defines every deployment "
            "variable (meta/argument_specs.yml's deployment entry point); restore its default there"
        )
    return names


def deployment_from(names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """The deployment (key → value) from its variables' names and their values, in the same order."""
    if len(names) != len(values):
        raise SglangConfigError(f"{len(names)} deployment variable names but {len(values)} values")
    return {name.removeprefix(VAR_PREFIX): value for name, value in zip(names, values, strict=True)}


def _coerce(key: str, value: Any) -> Any:
    """One deployment value as its argument_specs type makes it (None stays None: SGLang's default)."""
    if value is None:
        return None
    kind = DEPLOYMENT_TYPES[key]
    if kind == "raw":  # context_length
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise SglangConfigError(f"{var(key)} must be an integer or SGLang's short form such as 128k, got {value!r}")
        try:
            return value if isinstance(value, int) else human_readable_int(value)
        except (ValueError, InvalidOperation) as error:
            raise SglangConfigError(f"{var(key)}: {value!r} is not a length SGLang reads: {error}") from None
    # Ansible's checks take true for 1 and turn a list into its repr; neither is meant as a number or a name.
    words = "a positive integer" if key in _POSITIVE_INTS else _TYPE_WORDS[kind]
    if (isinstance(value, bool) and kind != "bool") or (kind in ("str", "path") and isinstance(value, list | dict)):
        raise SglangConfigError(f"{var(key)} must be {words} or null, got {value!r}")
    try:
        return _CHECKS[kind](value)
    except (TypeError, ValueError) as error:
        raise SglangConfigError(f"{var(key)} must be {words} or null, got {value!r} ({error})") from None


def _normalise(deployment: Any) -> dict[str, Any]:
    if not isinstance(deployment, dict):
        raise SglangConfigError(f"the deployment must be a mapping of {VAR_PREFIX}* values, got {type(deployment)}")
    unknown = sorted(set(deployment) - set(DEPLOYMENT_KEYS))
    if unknown:
        raise SglangConfigError(
            f"unknown deployment keys {unknown}; known: {', '.join(DEPLOYMENT_KEYS)} "
            f"(SGLang flags without a {VAR_PREFIX}* variable go in {var('extra_args')})"
        )
    values = {key: _coerce(key, deployment.get(key)) for key in DEPLOYMENT_KEYS}
    for key in _POSITIVE_INTS:
        if values[key] is not None and values[key] < 1:
            raise SglangConfigError(f"{var(key)} must be a positive integer or null, got {values[key]!r}")
    for key, kind in DEPLOYMENT_TYPES.items():
        if kind in ("str", "path") and values[key] is not None and not values[key].strip():
            raise SglangConfigError(f"{var(key)} must be a non-empty string or null, got {values[key]!r}")
    if values["port"] is not None and values["port"] > 65535:
        raise SglangConfigError(f"{var('port')} must be a TCP port (1-65535), got {values['port']}")
    fraction = values["mem_fraction_static"]
    if fraction is not None and not 0 < fraction < 1:
        raise SglangConfigError(f"{var('mem_fraction_static')} must be a number between 0 and 1, got {fraction!r}")
    if values["model_path"] is None:
        raise SglangConfigError(f"{var('model_path')} is required: the target model's directory on the host")
    if values["algorithm"] is None:
        values["algorithm"] = "none"
    if values["algorithm"] not in ALGORITHMS:
        raise SglangConfigError(
            f"{var('algorithm')} must be one of {', '.join(ALGORITHMS)}, got {values['algorithm']!r}"
        )
    if values["extra_args"] is None:
        values["extra_args"] = {}
    if not isinstance(values["extra_args"], dict):
        raise SglangConfigError(f"{var('extra_args')} must be a mapping of SGLang flag name to value")
    return values


def deployment_values(deployment: Any) -> dict[str, Any]:
    """The deployment's values as the renderer reads them (typed as argument_specs type them, None = SGLang's
    default), for checks of how they fit the host (service_fit); raises SglangConfigError as the renderer does."""
    return _normalise(deployment)


def _check_speculative(values: dict[str, Any], target: SglangTarget) -> None:
    algorithm = values["algorithm"]
    for key, knob in SPEC_KEYS.items():
        if values[key] is not None and algorithm not in knob.applies_to:
            raise SglangConfigError(
                f"{var(key)} applies to {'/'.join(knob.applies_to)} only, but {var('algorithm')} is {algorithm}; "
                "set it to null (each profile in configs/profiles sets every speculative variable)"
            )
    if algorithm == "none":
        return
    if algorithm == "DDTREE" and not target.ddtree:
        raise SglangConfigError(
            f"{var('algorithm')} DDTREE needs an SGLang install carrying the DDTree pull request "
            f"(sgl-project/sglang#29907); the engine sglang_env installs (SGLang {target.release}) does not have it. "
            "Apply the pull request with sglang_env_patches and declare it there (provides: [ddtree]), or install "
            "a commit carrying it (sglang_env_source git, sglang_env_git_provides: [ddtree]), or choose DFLASH"
        )
    if algorithm in ("DFLASH", "DDTREE", "EAGLE3") and values["drafter_path"] is None:
        raise SglangConfigError(
            f"{var('drafter_path')} is required with {var('algorithm')} {algorithm}: set model_weights_drafter to "
            "an entry of model_weights_drafters (each profile in configs/profiles names its drafter), or "
            "model_weights_drafter_repo / _local_path, so the weights stage fetches the drafter, or "
            f"{var('drafter_path')} to a drafter already on the host"
        )
    if algorithm in DFLASH_FAMILY:
        _check_dflash_family(values, target)


def _check_dflash_family(values: dict[str, Any], target: SglangTarget) -> None:
    block, tokens = values["block_size"], values["num_draft_tokens"]
    if block is not None and tokens is not None and block != tokens:
        raise SglangConfigError(
            f"{var('block_size')} ({block}) and {var('num_draft_tokens')} ({tokens}) must match for "
            f"{values['algorithm']} (the draft tokens are the block); set only {var('block_size')}"
        )
    block = block if block is not None else tokens
    if values["pp_size"] is not None and values["pp_size"] != 1:
        raise SglangConfigError(
            f"{var('pp_size')} must be 1 with {values['algorithm']} (SGLang: DFLASH only supports pp_size == 1); "
            f"use {var('tp_size')}/{var('ep_size')}"
        )
    window = values["draft_window"]
    if window is not None and block is not None and window < block:
        raise SglangConfigError(
            f"{var('draft_window')} ({window}) must be >= {var('block_size')} ({block}), or null for no window"
        )
    draft_backend = values["draft_attention_backend"]
    if draft_backend is not None and draft_backend not in target.rules.dflash_draft_backends:
        raise SglangConfigError(
            f"{var('draft_attention_backend')} {draft_backend!r} is not a draft attention backend SGLang "
            f"{target.release} runs {values['algorithm']} with (it would warn and run flashinfer instead); set one of "
            f"{', '.join(target.rules.dflash_draft_backends)}, or null for SGLang's choice"
        )
    attn_dp = values["attn_dp_size"]
    if attn_dp is not None and attn_dp > 1 and not target.rules.dflash_attn_dp:
        raise SglangConfigError(
            f"{var('attn_dp_size')} must be null or 1 with {values['algorithm']} on SGLang {target.release} "
            "(SGLang: Currently DFLASH speculative decoding does not support dp attention); attention-DP with "
            "DFLASH needs SGLang 0.5.23"
        )
    if attn_dp is not None and attn_dp > 1 and not values["enable_dp_lm_head"]:
        raise SglangConfigError(
            f"{var('enable_dp_lm_head')} must be true when {var('attn_dp_size')} > 1 with {values['algorithm']} "
            "(SGLang: DFLASH with dp attention requires --enable-dp-lm-head)"
        )


def _speculative_flags(values: dict[str, Any], target: SglangTarget) -> dict[str, Any]:
    algorithm = values["algorithm"]
    if algorithm == "none":
        return {}
    flags: dict[str, Any] = {"speculative-algorithm": algorithm}
    if values["drafter_path"] is not None:
        flags["speculative-draft-model-path"] = values["drafter_path"]
    if values["drafter_revision"] is not None:
        flags["speculative-draft-model-revision"] = values["drafter_revision"]
    if algorithm in DFLASH_FAMILY:
        if values["block_size"] is not None:
            flags["speculative-dflash-block-size"] = values["block_size"]
        elif values["num_draft_tokens"] is not None:
            flags["speculative-num-draft-tokens"] = values["num_draft_tokens"]
        if values["ddtree_budget"] is not None:
            flags["speculative-ddtree-budget"] = values["ddtree_budget"]
        if values["draft_window"] is not None:
            flags[target.rules.window] = values["draft_window"]
    else:
        for key, flag in (
            ("num_steps", "speculative-num-steps"),
            ("eagle_topk", "speculative-eagle-topk"),
            ("num_draft_tokens", "speculative-num-draft-tokens"),
        ):
            if values[key] is not None:
                flags[flag] = values[key]
    if values["draft_attention_backend"] is not None:
        flags["speculative-draft-attention-backend"] = values["draft_attention_backend"]
    return flags


def _parallel_flags(values: dict[str, Any], target: SglangTarget) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    attn_dp, dp = values["attn_dp_size"], values["dp_size"]
    if attn_dp is not None and attn_dp > 1 and target.rules.attn_dp == "enable-dp-attention":
        # Before 0.5.23 attention-DP is spelled `--dp-size N --enable-dp-attention`: one number for both.
        if dp is not None and dp != attn_dp:
            raise SglangConfigError(
                f"SGLang {target.release} has no separate attention-DP width: {var('dp_size')} ({dp}) and "
                f"{var('attn_dp_size')} ({attn_dp}) must be equal or {var('dp_size')} null"
            )
        flags["dp-size"] = attn_dp
        flags["enable-dp-attention"] = True
        return flags
    if dp is not None:
        flags["dp-size"] = dp
    if attn_dp is not None and target.rules.attn_dp == "attn-dp-size":
        flags["attn-dp-size"] = attn_dp
    return flags


def _cuda_graph_flags(values: dict[str, Any], target: SglangTarget) -> dict[str, Any]:
    if values["cuda_graph"] is False:
        if values["cuda_graph_max_bs"] is not None:
            raise SglangConfigError(
                f"{var('cuda_graph_max_bs')} has no effect with {var('cuda_graph')} false; set it to null"
            )
        return dict(target.rules.graph_off)
    if values["cuda_graph_max_bs"] is not None:
        return {target.rules.max_bs: values["cuda_graph_max_bs"]}
    return {}


def _extra_flags(extra: dict[str, Any], rendered: dict[str, Any]) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    for name, value in extra.items():
        if not isinstance(name, str) or not _FLAG_NAME.match(name):
            raise SglangConfigError(
                f"{var('extra_args')}: {name!r} is not an SGLang flag name; write it as SGLang spells it, "
                "with dashes and without the leading '--' (e.g. enable-eplb: true)"
            )
        if name in rendered:
            raise SglangConfigError(
                f"{var('extra_args')}: {name!r} is already rendered from a {VAR_PREFIX}* variable; set that variable "
                "instead of repeating the flag"
            )
        if value is None:
            continue
        flags[name] = value
    return flags


# Keys whose flags depend on other keys: each group renders where its first key stands in the render order, and its
# other keys render with it (the drafter, block, tree and EAGLE knobs with the algorithm; the attention-DP width with
# dp_size; the graph batch size with cuda_graph). extra_args renders last, after every flag it may not repeat.
_GROUPS: dict[str, Callable[[dict[str, Any], SglangTarget], dict[str, Any]]] = {
    "algorithm": _speculative_flags,
    "dp_size": _parallel_flags,
    "cuda_graph": _cuda_graph_flags,
}
# Every other key is one flag: the key with dashes (SGLang's own spelling of its flags, `served-model-name`).
_DIRECT = {
    key: key.replace("_", "-")
    for key in DEPLOYMENT_KEYS
    if key not in _GROUPED and key not in _GROUPS and key != "extra_args"
}


def server_config(deployment: dict[str, Any], sglang_version: str) -> dict[str, Any]:
    """The `--config` YAML content for one SGLang version: flag names with dashes, typed values.

    A null deployment value leaves SGLang's default (the key is not rendered).
    """
    target = parse_sglang_version(sglang_version)
    values = _normalise(deployment)
    _check_speculative(values, target)
    config: dict[str, Any] = {}
    for key in DEPLOYMENT_KEYS:  # the generated render order: the release's server.yaml lists its flags in it
        if key in _DIRECT:
            if values[key] is not None:
                config[_DIRECT[key]] = values[key]
        elif key in _GROUPS:
            config.update(_GROUPS[key](values, target))
    config.update(_extra_flags(values["extra_args"], config))
    return config


def engine_env(deployment: dict[str, Any], sglang_version: str) -> dict[str, str]:
    """Environment the engine needs beyond its config file (string values, as systemd takes them)."""
    target = parse_sglang_version(sglang_version)
    values = _normalise(deployment)
    _check_speculative(values, target)
    env: dict[str, str] = {}
    if values["algorithm"] == "DDTREE" and values["ddtree_topk"] is not None:
        # sgl-project/sglang#29907 reads the per-depth candidate count from the environment, not from a flag.
        env["SGLANG_DDTREE_MAX_TOPK"] = str(values["ddtree_topk"])
    return env
