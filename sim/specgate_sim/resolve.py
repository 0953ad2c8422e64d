"""Turn parsed flags into what the sim runs, with SGLang 0.5.23's resolution rules and messages for
the checks specgate relies on (sglang 0.5.23: srt/arg_groups/speculative_hook.py)."""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specgate_sim.simenv import SimEnv
from specgate_sim.specmodel import SpecConfig

log = logging.getLogger("sglang.srt.server_args")

WEIGHT_SUFFIXES = (".safetensors", ".bin")
# sglang 0.5.23: srt/speculative/spec_info.py::SpeculativeAlgorithm, plus DDTREE from PR #29907
KNOWN_ALGORITHMS = (
    "EAGLE",
    "EAGLE3",
    "NEXTN",
    "STANDALONE",
    "NGRAM",
    "DFLASH",
    "DSPARK",
    "UNO",
    "FROZEN_KV_MTP",
    "DDTREE",
)
SIMULATED_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "DFLASH", "DDTREE")
DEFAULT_MAX_RUNNING = 256
DDTREE_DEFAULT_TOPK = 8


class ResolveError(Exception):
    """A configuration SGLang would refuse: the server exits before binding its port."""


@dataclass
class Resolved:
    args: dict[str, Any]  # flag dests -> resolved values, as /server_info reports them
    spec: SpecConfig
    target_config: dict[str, Any]
    drafter_config: dict[str, Any] | None
    weight_bytes: int
    load_seconds: float
    ddtree_env: dict[str, str] = field(default_factory=dict)

    @property
    def served_model_name(self) -> str:
        return str(self.args["served_model_name"])


def read_config(path: str, what: str) -> dict[str, Any]:
    config = Path(path) / "config.json"
    if not config.is_file():
        # transformers' message when a local dir lacks config.json (SGLang surfaces it as is)
        raise ResolveError(f"OSError: {path} does not appear to have a file named config.json. ({what})")
    try:
        data = json.loads(config.read_text())
    except json.JSONDecodeError as exc:
        raise ResolveError(
            f"OSError: It looks like the config file at '{config}' is not a valid JSON file. ({exc})"
        ) from exc
    if not isinstance(data, dict):
        raise ResolveError(f"OSError: {config} does not hold a JSON object ({what})")
    return data


def weight_bytes(path: str) -> int:
    """Apparent size of the weight files: what a load reads, sparse fixture files included."""
    root = Path(path)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))


def drafter_block_size(config: Mapping[str, Any]) -> int | None:
    """sglang 0.5.23: srt/speculative/dflash_utils.py::parse_dflash_draft_config — dflash_config.<key>,
    else the top-level key."""
    nested = config.get("dflash_config")
    value = nested.get("block_size") if isinstance(nested, Mapping) else None
    if value is None:
        value = config.get("block_size")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return None


# sglang 0.5.23 srt/utils/hf_transformers/common.py: CONTEXT_LENGTH_KEYS, read in this order.
CONTEXT_LENGTH_KEYS = (
    "max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings",
)


def derived_context_length(config: Mapping[str, Any]) -> int:
    """sglang 0.5.23 srt/utils/hf_transformers/common.py::get_context_length: the first length key, times the
    rope scaling factor unless the scaling names its original length or is llama3's; 2048 when none is set."""
    rope_scaling = config.get("rope_scaling") or {}
    factor = rope_scaling.get("factor", 1) if rope_scaling else 1
    if "original_max_position_embeddings" in rope_scaling or rope_scaling.get("rope_type") == "llama3":
        factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        if config.get(key) is not None:
            return int(factor * config[key])
    return 2048


def _check_context_length(requested: int, model: Mapping[str, Any], env: Mapping[str, str], *,
                          draft: bool = False) -> None:  # fmt: skip
    """sglang 0.5.23 srt/configs/model_config.py::ModelConfig._derive_context_length: a context longer than the
    model's is refused (before any weights load) unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set. The
    drafter's model config is built with the same user-set context (``draft``: "Target model's" in the message):
    model_runner_components/spec_aux_hidden_state.py, _resolve_eagle_aux_hidden_state and
    _resolve_dflash_aux_hidden_state, before any weights load."""
    derived = derived_context_length(model)
    if requested <= derived or env.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "").lower() in ("1", "true"):
        return
    reason = "Target model's" if draft else "User-specified"
    raise ResolveError(
        f"ValueError: Warning: {reason} context_length ({requested}) is greater than the derived "
        f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
        "context_length may differ from max_position_embeddings in the model's config. To allow overriding this "
        "maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    )


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    return int(raw) if raw not in (None, "") else None


def resolve(ns: argparse.Namespace, sim: SimEnv, env: Mapping[str, str] | None = None) -> Resolved:
    env = os.environ if env is None else env
    args = dict(vars(ns))
    args.pop("config", None)
    if not args.get("model_path"):
        raise ResolveError("ValueError: --model-path is required")
    target = read_config(args["model_path"], "target")
    args["served_model_name"] = args.get("served_model_name") or args["model_path"]
    # srt/arg_groups/serving_hook.py: tokenizer_path defaults to model_path
    args["tokenizer_path"] = args.get("tokenizer_path") or args["model_path"]
    # Only a context the user set reaches the drafter's model config (ModelConfig.from_server_args).
    user_context = args.get("context_length")
    if user_context is None:
        args["context_length"] = derived_context_length(target)
    else:
        _check_context_length(user_context, target, env)
    # srt/arg_groups/validation_hook.py::check_server_args: ':' is reserved for LoRA's model:adapter syntax.
    if ":" in args["served_model_name"]:
        raise ResolveError(
            "AssertionError: served_model_name cannot contain a colon (':') character. The colon is reserved for the "
            "'model:adapter' syntax used in LoRA adapter specification. "
            f"Invalid value: '{args['served_model_name']}'"
        )
    if args.get("device") is None:
        args["device"] = "cuda"
    if args.get("random_seed") is None:
        args["random_seed"] = sim.seed if sim.seed is not None else 0

    algo_raw = args.get("speculative_algorithm")
    drafter: dict[str, Any] | None = None
    spec = SpecConfig()
    ddtree_env: dict[str, str] = {}
    if algo_raw is not None:
        algo = algo_raw.upper()
        if algo not in KNOWN_ALGORITHMS:
            raise ResolveError(f"ValueError: Unknown speculative algorithm name: {algo_raw}")
        if algo not in SIMULATED_ALGORITHMS:
            raise ResolveError(f"ValueError: specgate-sim does not simulate --speculative-algorithm {algo}")
        if args.get("speculative_draft_model_path") is not None:
            drafter = read_config(args["speculative_draft_model_path"], "draft model")
            if args.get("speculative_draft_model_revision") is None:
                args["speculative_draft_model_revision"] = "main"
            if user_context is not None:
                _check_context_length(user_context, drafter, env, draft=True)
        args["speculative_algorithm"] = algo
        if algo in ("DFLASH", "DDTREE"):
            spec = _resolve_dflash(args, algo, drafter, env, ddtree_env)
        else:
            spec = _resolve_eagle(args, algo, drafter)

    _check_nodes(args)
    model_bytes = weight_bytes(args["model_path"])
    if args.get("speculative_draft_model_path"):
        model_bytes += weight_bytes(args["speculative_draft_model_path"])
    load = sim.load_seconds if sim.load_seconds is not None else model_bytes / sim.load_bandwidth
    if args.get("max_running_requests") is None:
        args["max_running_requests"] = DEFAULT_MAX_RUNNING
    return Resolved(args, spec, target, drafter, model_bytes, load + sim.slow_load_seconds, ddtree_env)


def _check_nodes(args: dict[str, Any]) -> None:
    """sglang 0.5.23: srt/arg_groups/validation_hook.py::check_server_args, the asserts of a multi-node world."""
    nnodes = int(args.get("nnodes") or 1)
    if (args["tp_size"] * args["pp_size"]) % nnodes:
        raise ResolveError("AssertionError: tp_size must be divisible by number of nodes")
    if args["dp_size"] > 1 and nnodes != 1:
        raise ResolveError(
            "AssertionError: multi-node data-parallel replicas are not supported; use attention DP (--attn-dp-size) "
            "across nodes"
        )


def _resolve_dflash(
    args: dict[str, Any], algo: str, drafter: dict[str, Any] | None, env: Mapping[str, str], ddtree_env: dict[str, str]
) -> SpecConfig:
    # sglang 0.5.23: srt/arg_groups/speculative_hook.py::_handle_dflash (DDTREE builds on it in PR #29907)
    if not str(args["device"]).startswith(("cuda", "npu", "xpu")):
        raise ResolveError(
            f"ValueError: {algo} speculative decoding is not supported by CpuPlatform on device {args['device']!r}."
        )
    if args["attn_dp_size"] > 1 and not args["enable_dp_lm_head"]:
        raise ResolveError("ValueError: DFLASH with dp attention requires --enable-dp-lm-head.")
    if args["pp_size"] != 1:
        raise ResolveError(f"ValueError: Currently {algo} speculative decoding only supports pp_size == 1.")
    if drafter is None:
        raise ResolveError(f"ValueError: {algo} speculative decoding requires setting --speculative-draft-model-path.")
    topk_flag = args.get("speculative_eagle_topk")
    for name in ("speculative_num_steps", "speculative_eagle_topk"):
        if args.get(name) not in (None, 1) and algo == "DFLASH":
            log.warning("DFLASH only supports %s == 1; overriding %s=%s to 1.", name, name, args[name])
        args[name] = 1
    trained = drafter_block_size(drafter)
    block = args.get("speculative_dflash_block_size")
    if block is not None:
        if block <= 0:
            raise ResolveError(
                f"ValueError: DFLASH requires --speculative-dflash-block-size to be positive, got {block}."
            )
        draft_tokens = args.get("speculative_num_draft_tokens")
        if draft_tokens is not None and draft_tokens != block:
            raise ResolveError(
                "ValueError: Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but "
                "they differ. For DFLASH they must match. "
                f"speculative_num_draft_tokens={draft_tokens}, speculative_dflash_block_size={block}."
            )
    elif args.get("speculative_num_draft_tokens") is not None and algo == "DFLASH":
        block = args["speculative_num_draft_tokens"]
    if block is None:
        if trained is None:
            log.warning("speculative_num_draft_tokens is not set; defaulting to 16 for DFLASH.")
        block = trained or 16
    if trained is None:
        trained = block
    window = args.get("speculative_draft_window_size")
    if window is not None and window < block:
        raise ResolveError(
            "ValueError: --speculative-draft-window-size must be >= --speculative-num-draft-tokens (block_size). "
            f"window_size={window}, block_size={block}."
        )
    args["speculative_dflash_block_size"] = block
    if args.get("max_running_requests") is None:
        args["max_running_requests"] = 48
        log.warning(
            "Max running requests is reset to 48 for speculative decoding. "
            "You can override this by explicitly setting --max-running-requests."
        )
    if algo == "DFLASH":
        args["speculative_num_draft_tokens"] = block
        return SpecConfig("DFLASH", block, trained, block - 1, 1, 1, window)
    # PR #29907: budget defaults to block_size - 1; CUDA graphs capture budget + 1 draft tokens
    budget = args.get("speculative_ddtree_budget")
    if budget is None:
        budget = block - 1
    if budget < 1:
        raise ResolveError(f"ValueError: --speculative-ddtree-budget must be positive, got {budget}.")
    args["speculative_ddtree_budget"] = budget
    args["speculative_num_draft_tokens"] = budget + 1
    max_topk = _env_int(env, "SGLANG_DDTREE_MAX_TOPK")
    bonus = env.get("SGLANG_DDTREE_DEPTH_BONUS")
    for name in ("SGLANG_DDTREE_MAX_TOPK", "SGLANG_DDTREE_DEPTH_BONUS", "SGLANG_DDTREE_RANK_PROBE"):
        if env.get(name) not in (None, ""):
            ddtree_env[name] = str(env[name])
    topk = topk_flag if topk_flag is not None else DDTREE_DEFAULT_TOPK
    args["speculative_eagle_topk"] = topk
    return SpecConfig(
        "DDTREE",
        block,
        trained,
        budget,
        topk,
        1,
        window,
        depth_bonus=float(bonus) if bonus else 0.0,
        max_topk=max_topk,
    )


def _resolve_eagle(args: dict[str, Any], algo: str, drafter: dict[str, Any] | None) -> SpecConfig:
    if algo in ("EAGLE", "EAGLE3") and drafter is None:
        raise ResolveError(f"ValueError: {algo} speculative decoding requires setting --speculative-draft-model-path.")
    reported = "EAGLE" if algo == "NEXTN" else algo  # sglang 0.5.23: NEXTN aliases EAGLE
    args["speculative_algorithm"] = reported
    steps = args.get("speculative_num_steps") or 3
    topk = args.get("speculative_eagle_topk") or 1
    draft_tokens = args.get("speculative_num_draft_tokens") or steps + 1
    args.update(speculative_num_steps=steps, speculative_eagle_topk=topk, speculative_num_draft_tokens=draft_tokens)
    return SpecConfig(algo, draft_tokens, draft_tokens, draft_tokens - 1, topk, steps)
