"""A deployment judged against the target's config.json by SGLang's rules (module_utils/specgate/weights/
target_limits.py)."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.weights.target_limits import derived_context_length, target_refusals, text_config

pytestmark = pytest.mark.host

KIMI = {"architectures": ["DeepseekV3ForCausalLM"], "num_attention_heads": 64, "max_position_embeddings": 262144}


def test_the_context_length_is_derived_by_sglangs_rule():
    assert derived_context_length({"max_position_embeddings": 4096}) == 4096
    assert derived_context_length({"seq_length": 1000, "max_position_embeddings": 4096}) == 1000
    assert derived_context_length({"max_position_embeddings": 4096, "rope_scaling": {"factor": 4}}) == 16384
    scaled = {"max_position_embeddings": 4096, "rope_scaling": {"factor": 4, "original_max_position_embeddings": 1}}
    assert derived_context_length(scaled) == 4096
    assert derived_context_length({"max_position_embeddings": 8192, "rope_scaling": {"rope_type": "llama3",
                                                                                     "factor": 8}}) == 8192
    assert derived_context_length({}) == 2048


def test_a_multimodal_config_is_judged_by_its_language_models_part():
    config = {"architectures": ["KimiK25ForConditionalGeneration"], "text_config": KIMI}
    assert text_config(config) is KIMI
    assert text_config({"thinker_config": {"text_config": KIMI}}) is KIMI
    assert text_config(KIMI) is KIMI


def test_kimi_on_eight_gpus_with_its_own_context_fits():
    assert target_refusals(KIMI, 131072, 8) == []
    assert target_refusals(KIMI, "256Ki", 8, 1) == []
    assert target_refusals(KIMI) == []


@pytest.mark.parametrize("length", [262145, "300k", "1M"])
def test_a_context_longer_than_the_models_is_refused_naming_the_variable_and_the_override(length):
    (refusal,) = target_refusals(KIMI, length, 8)
    assert refusal.startswith("sglang_service_context_length")
    assert "262144" in refusal
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" in refusal


def test_the_engine_override_lets_a_longer_context_through_as_sglang_does():
    assert target_refusals(KIMI, 300000, 8, engine_env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}) == []


def test_heads_the_attention_tp_group_cannot_split_are_refused():
    (refusal,) = target_refusals(KIMI, None, 48)
    assert refusal.startswith("sglang_service_tp_size 48")
    assert "64 attention heads" in refusal
    assert target_refusals({**KIMI, "num_attention_heads": 12}, None, 8) != []
    # Attention-DP shrinks the attention-TP group: 8 GPUs in 8 attention-DP groups split nothing.
    assert target_refusals({**KIMI, "num_attention_heads": 12}, None, 8, 8) == []
    assert target_refusals({**KIMI, "num_attention_heads": 10}, None, 8, 2) != []
