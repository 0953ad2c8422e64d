"""Read a DFlash drafter's config.json the way SGLang does, and check it strictly against the target.

SGLang 0.5.23 (`srt/speculative/dflash_utils.py::parse_dflash_draft_config`) reads each key from
`dflash_config.<key>`, else from the top level, and only *warns* on a malformed config (falling back to
block size 16). A drafter that SGLang would half-accept costs a 6-10 minute load to discover, so every
hard incompatibility is an error here, and a soft one (asking for a deeper block than trained) a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DFLASH_ARCHITECTURE = "DFlashDraftModel"
DEFAULT_MASK_TOKEN = "<|MASK|>"


@dataclass
class DrafterCheck:
    facts: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _is_int(value: object) -> bool:
    # JSON true/false load as bool, which Python counts as int; a drafter config with "block_size": true is broken.
    return isinstance(value, int) and not isinstance(value, bool)


def dflash_value(config: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """SGLang's lookup order: dflash_config.<key>, then the top level."""
    nested = config.get("dflash_config")
    if isinstance(nested, Mapping) and key in nested:
        return nested[key]
    return config.get(key, default)


def target_dims(target_config: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(num_hidden_layers, vocab_size) of the target; multimodal Kimi K2.5/K2.6 configs nest them in text_config."""
    text = target_config.get("text_config")
    source = text if isinstance(text, Mapping) and "num_hidden_layers" in text else target_config
    layers = source.get("num_hidden_layers")
    vocab = source.get("vocab_size", target_config.get("vocab_size"))
    return (layers if _is_int(layers) else None), (vocab if _is_int(vocab) else None)


def tokenizer_token_id(tokenizer_json: Mapping[str, Any] | None, token: str) -> int | None:
    """Id of `token` in a tokenizers tokenizer.json (added tokens first, then the model vocab)."""
    if not tokenizer_json:
        return None
    for added in tokenizer_json.get("added_tokens", []) or []:
        if added.get("content") == token and _is_int(added.get("id")):
            return added["id"]
    vocab = (tokenizer_json.get("model") or {}).get("vocab")
    if isinstance(vocab, Mapping) and _is_int(vocab.get(token)):
        return vocab[token]
    return None


def default_target_layer_ids(target_layers: int, draft_layers: int) -> list[int]:
    """SGLang's default when the drafter names none: draft_layers ids spread over 1..target_layers-3."""
    start, end = 1, max(target_layers - 3, 1)
    if draft_layers <= 1:
        return [(start + end) // 2]
    return [round(start + i * (end - start) / (draft_layers - 1)) for i in range(draft_layers)]


def check_dflash_drafter(
    drafter_config: Mapping[str, Any],
    target_config: Mapping[str, Any],
    *,
    tokenizer_json: Mapping[str, Any] | None = None,
    requested_block_size: int | None = None,
    target_layers_override: int | None = None,
) -> DrafterCheck:
    """Facts {block_size, num_hidden_layers, target_layer_ids, mask_token_id} plus errors and warnings."""
    check = DrafterCheck()
    errors = check.errors
    architectures = drafter_config.get("architectures")
    if not isinstance(architectures, list) or DFLASH_ARCHITECTURE not in architectures:
        errors.append(f"architectures is {architectures!r}; a DFlash drafter lists {DFLASH_ARCHITECTURE!r}")

    config_layers, vocab = target_dims(target_config)
    target_layers = target_layers_override or config_layers
    if target_layers is None:
        errors.append("the target's config.json has no integer num_hidden_layers (nor text_config.num_hidden_layers);"
                      " set model_weights_target_layers")
    if vocab is None:
        errors.append("the target's config.json has no integer vocab_size to check mask_token_id against")

    block_size = dflash_value(drafter_config, "block_size")
    if block_size is None:
        errors.append("block_size is missing (dflash_config.block_size or top level); SGLang would silently use 16")
    elif not _is_int(block_size) or block_size < 1:
        errors.append(f"block_size must be an integer >= 1, got {block_size!r}")

    draft_layers = dflash_value(drafter_config, "num_hidden_layers")
    if not _is_int(draft_layers) or draft_layers < 1:
        errors.append(f"num_hidden_layers must be an integer >= 1, got {draft_layers!r}")

    trained_target_layers = dflash_value(drafter_config, "num_target_layers")
    if trained_target_layers is not None and target_layers is not None and trained_target_layers != target_layers:
        errors.append(f"the drafter was trained on a {trained_target_layers}-layer target (num_target_layers), "
                      f"the target has {target_layers} layers")

    layer_ids = dflash_value(drafter_config, "target_layer_ids")
    if layer_ids is None:
        if target_layers is not None and _is_int(draft_layers):
            layer_ids = default_target_layer_ids(target_layers, draft_layers)
    elif not isinstance(layer_ids, list) or not layer_ids or not all(_is_int(i) for i in layer_ids):
        errors.append(f"target_layer_ids must be a non-empty list of integers, got {layer_ids!r}")
        layer_ids = None
    elif target_layers is not None:
        outside = [i for i in layer_ids if not 0 <= i < target_layers]
        if outside:
            errors.append(f"target_layer_ids {outside} are outside the target's layers 0..{target_layers - 1}")

    mask_token = dflash_value(drafter_config, "mask_token", DEFAULT_MASK_TOKEN)
    mask_id = dflash_value(drafter_config, "mask_token_id")
    tokenizer_id = tokenizer_token_id(tokenizer_json, mask_token) if isinstance(mask_token, str) else None
    if mask_id is None:
        mask_id = tokenizer_id
        if mask_id is None:
            errors.append(f"mask_token_id is missing and the target tokenizer has no {mask_token!r} token")
    elif not _is_int(mask_id):
        errors.append(f"mask_token_id must be an integer, got {type(mask_id).__name__} {mask_id!r}")
    elif mask_id < 0 or (vocab is not None and mask_id >= vocab):
        errors.append(f"mask_token_id {mask_id} is outside the target vocabulary 0..{(vocab or 0) - 1}")
    elif tokenizer_id is not None and tokenizer_id != mask_id:
        errors.append(f"mask_token_id {mask_id} is not the target tokenizer's {mask_token!r} (id {tokenizer_id})")

    if (
        requested_block_size is not None
        and _is_int(block_size)
        and block_size >= 1
        and requested_block_size > block_size
    ):
        check.warnings.append(
            f"requested block size {requested_block_size} exceeds the trained {block_size}: positions "
            f"{block_size}-{requested_block_size - 1} are out of distribution for a drafter trained at block "
            f"{block_size}"
        )

    check.facts = {
        "block_size": block_size if _is_int(block_size) else None,
        "num_hidden_layers": draft_layers if _is_int(draft_layers) else None,
        "target_layer_ids": layer_ids,
        "mask_token_id": mask_id if _is_int(mask_id) else None,
    }
    return check
