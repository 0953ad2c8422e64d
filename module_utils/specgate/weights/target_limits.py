"""Judge a deployment against the target model's own config.json, before its weights are downloaded.

A 550 GB download takes hours; SGLang refuses a context longer than the model's, and a tensor-parallel split that
does not divide the attention heads, only once the weights are on disk. The config file is a few kilobytes, so the
weights stage reads it first and applies SGLang's own rules to it:

- context length: sglang 0.5.23 srt/configs/model_config.py::ModelConfig._derive_context_length refuses one above
  srt/utils/hf_transformers/common.py::get_context_length of the model's text config (unless
  SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set for the engine);
- attention heads: the attention layers split the heads over the attention-TP group, tp_size / attn_dp_size
  (sglang 0.5.23 srt/models/deepseek_v2.py: ``assert num_heads % attn_tp_size == 0``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.module_utils.specgate.common.engine import human_readable_int

# sglang 0.5.23 srt/utils/hf_transformers/common.py::CONTEXT_LENGTH_KEYS, read in this order.
CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
# sglang 0.5.23 srt/utils/hf_transformers/common.py::get_hf_text_config: where a multimodal config keeps its LLM's.
TEXT_CONFIG_KEYS = ("thinker_config", "llm_config", "language_config", "text_config")
OVERRIDE_ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config (get_hf_text_config): thinker > llm > language > text config."""
    for key in TEXT_CONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            inner = sub.get("text_config") if key == "thinker_config" else None
            return inner if isinstance(inner, Mapping) else sub
    return config


def derived_context_length(config: Mapping[str, Any]) -> int:
    """get_context_length: the first length key, times the rope scaling factor unless the scaling names its
    original length or is llama3's; 2048 when no key is set."""
    rope_scaling = config.get("rope_scaling") or {}
    factor = rope_scaling.get("factor", 1) if isinstance(rope_scaling, Mapping) else 1
    if isinstance(rope_scaling, Mapping) and (
        "original_max_position_embeddings" in rope_scaling or rope_scaling.get("rope_type") == "llama3"
    ):
        factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        if config.get(key) is not None:
            return int(factor * config[key])
    return 2048


def _as_int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return human_readable_int(value)
    return int(value)


def target_refusals(
    config: Mapping[str, Any],
    context_length: Any = None,
    tp_size: Any = None,
    attn_dp_size: Any = None,
    engine_env: Mapping[str, str] | None = None,
) -> list[str]:
    """What SGLang would refuse about serving this model so; empty when it fits. Each names the variable."""
    text = text_config(config)
    refusals = []
    requested = _as_int(context_length)
    allowed = str((engine_env or {}).get(OVERRIDE_ENV, "")).lower() in ("1", "true")
    if requested is not None and not allowed:
        derived = derived_context_length(text)
        if requested > derived:
            refusals.append(
                f"sglang_service_context_length {requested} is longer than the model's own context ({derived}, from "
                "its config.json by SGLang's rule); SGLang refuses it when it loads. Set at most "
                f"{derived}, or null for the model's, or set {OVERRIDE_ENV}=1 in sglang_service_extra_env if the "
                "model really takes more"
            )
    heads = text.get("num_attention_heads")
    tp, attn_dp = _as_int(tp_size) or 1, _as_int(attn_dp_size) or 1
    attn_tp = tp // attn_dp if attn_dp and tp % attn_dp == 0 else tp
    if isinstance(heads, int) and attn_tp > 1 and heads % attn_tp:
        refusals.append(
            f"sglang_service_tp_size {tp} splits attention over {attn_tp} GPUs (tp_size / attn_dp_size), but the model "
            f"has {heads} attention heads, which {attn_tp} does not divide; SGLang refuses it when it loads. Choose a "
            f"tp_size (or sglang_service_attn_dp_size) that leaves a divisor of {heads}"
        )
    return refusals
