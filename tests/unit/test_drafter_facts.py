"""Drafter checks SGLang only warns about: each must fail here, with the reason."""

from __future__ import annotations

import copy

import pytest
from ansible.module_utils.specgate.weights.drafter_facts import (
    check_dflash_drafter,
    default_target_layer_ids,
    target_dims,
    tokenizer_token_id,
)

pytestmark = pytest.mark.host

TARGET = {"num_hidden_layers": 61, "vocab_size": 163840}
TOKENIZER = {"added_tokens": [{"id": 163838, "content": "<|MASK|>"}], "model": {"vocab": {"a": 0}}}
DRAFTER = {
    "architectures": ["DFlashDraftModel"],
    "num_hidden_layers": 6,
    "num_target_layers": 61,
    "dflash_config": {"block_size": 8, "target_layer_ids": [1, 12, 24, 36, 48, 58], "mask_token_id": 163838},
}


def _with(**dflash):
    config = copy.deepcopy(DRAFTER)
    for key, value in dflash.items():
        if value is None:
            config["dflash_config"].pop(key, None)
        else:
            config["dflash_config"][key] = value
    return config


def test_a_good_drafter_yields_trained_block_size_and_depth():
    check = check_dflash_drafter(DRAFTER, TARGET, tokenizer_json=TOKENIZER)
    assert check.errors == []
    assert check.warnings == []
    assert check.facts == {"block_size": 8, "num_hidden_layers": 6, "target_layer_ids": [1, 12, 24, 36, 48, 58],
                           "mask_token_id": 163838}


def test_top_level_keys_are_read_when_dflash_config_lacks_them():
    config = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 4, "block_size": 16,
              "target_layer_ids": [2, 30], "mask_token_id": 5}
    check = check_dflash_drafter(config, TARGET)
    assert check.errors == []
    assert check.facts["block_size"] == 16


def test_asking_deeper_than_trained_warns_with_the_out_of_distribution_positions():
    check = check_dflash_drafter(DRAFTER, TARGET, requested_block_size=16)
    assert check.errors == []
    assert check.warnings == [
        "requested block size 16 exceeds the trained 8: positions 8-15 are out of distribution for a drafter "
        "trained at block 8"]
    assert check_dflash_drafter(DRAFTER, TARGET, requested_block_size=8).warnings == []


@pytest.mark.parametrize(
    ("drafter", "reason"),
    [
        (_with(block_size=None), "block_size is missing"),
        (_with(block_size=0), "block_size must be an integer >= 1, got 0"),
        (_with(block_size="8"), "block_size must be an integer >= 1, got '8'"),
        (_with(block_size=True), "block_size must be an integer >= 1, got True"),
        (_with(target_layer_ids=[1, 61]), "target_layer_ids [61] are outside the target's layers 0..60"),
        (_with(target_layer_ids=[]), "target_layer_ids must be a non-empty list of integers"),
        (_with(mask_token_id="163838"), "mask_token_id must be an integer, got str '163838'"),
        (_with(mask_token_id=163840), "mask_token_id 163840 is outside the target vocabulary 0..163839"),
        (_with(mask_token_id=-1), "mask_token_id -1 is outside the target vocabulary"),
        (_with(mask_token_id=7), "mask_token_id 7 is not the target tokenizer's '<|MASK|>' (id 163838)"),
        ({**DRAFTER, "architectures": ["LlamaForCausalLM"]}, "architectures is ['LlamaForCausalLM']"),
        ({**DRAFTER, "num_target_layers": 40}, "trained on a 40-layer target (num_target_layers), the target has 61"),
        ({**DRAFTER, "num_hidden_layers": 0}, "num_hidden_layers must be an integer >= 1, got 0"),
    ],
)
def test_hard_incompatibilities_fail_with_the_reason(drafter, reason):
    check = check_dflash_drafter(drafter, TARGET, tokenizer_json=TOKENIZER)
    assert any(reason in error for error in check.errors), check.errors


def test_missing_mask_id_falls_back_to_the_tokenizer_like_sglang():
    check = check_dflash_drafter(_with(mask_token_id=None), TARGET, tokenizer_json=TOKENIZER)
    assert check.errors == []
    assert check.facts["mask_token_id"] == 163838
    assert check_dflash_drafter(_with(mask_token_id=None), TARGET).errors


def test_target_layer_override_wins_over_the_config():
    check = check_dflash_drafter(_with(target_layer_ids=[70]), {**TARGET, "num_hidden_layers": None},
                                 target_layers_override=80)
    assert not any("target_layer_ids" in e for e in check.errors)


def test_multimodal_kimi_configs_nest_the_text_model():
    assert target_dims({"text_config": {"num_hidden_layers": 61, "vocab_size": 163840}}) == (61, 163840)
    assert target_dims({"num_hidden_layers": "61"}) == (None, None)


def test_default_target_layers_are_spread_like_sglang():
    ids = default_target_layer_ids(61, 6)
    assert ids[0] == 1
    assert ids[-1] == 58
    assert ids == sorted(set(ids))
    check = check_dflash_drafter(_with(target_layer_ids=None), TARGET, tokenizer_json=TOKENIZER)
    assert check.facts["target_layer_ids"] == ids


def test_tokenizer_lookup_reads_added_tokens_then_vocab():
    assert tokenizer_token_id(TOKENIZER, "<|MASK|>") == 163838
    assert tokenizer_token_id(TOKENIZER, "a") == 0
    assert tokenizer_token_id(TOKENIZER, "zz") is None
    assert tokenizer_token_id(None, "a") is None
