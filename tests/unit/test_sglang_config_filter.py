"""The Jinja filters the sglang_service role renders releases with."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from sglang_config import FilterModule


def test_filters_are_registered_under_the_names_the_role_uses():
    assert set(FilterModule().filters()) == {"sglang_server_config", "sglang_engine_env", "sglang_config_refusal",
                                             "sglang_fit_refusal", "sglang_deployment_values",
                                             "sglang_deployment_var_names", "sglang_deployment_from"}


def test_a_lost_default_is_named_as_an_ansible_error():
    filters = FilterModule().filters()
    with pytest.raises(AnsibleFilterError, match=r"sglang_service_model_path.* undefined"):
        filters["sglang_deployment_var_names"](["sglang_service_port"])
    with pytest.raises(AnsibleFilterError, match="1 deployment variable names but 0 values"):
        filters["sglang_deployment_from"](["sglang_service_port"], [])


def test_the_fit_filter_names_each_misfit_and_the_values_filter_types_them():
    filters = FilterModule().filters()
    gpu = {"has_gpus": True, "count": 8, "names": ["NVIDIA H200"] * 8, "arch": "sm90", "target_arch": "sm90"}
    assert filters["sglang_fit_refusal"]({"model_path": "/m", "tp_size": "8"}, gpu) == ""
    refusal = filters["sglang_fit_refusal"]({"model_path": "/m", "tp_size": 16, "attention_backend": "trtllm_mla"}, gpu)
    assert "- sglang_service_tp_size:" in refusal
    assert "- sglang_service_attention_backend:" in refusal
    values = filters["sglang_deployment_values"]({"model_path": "/m", "block_size": "16", "context_length": "128k"})
    assert values["block_size"] == 16
    assert values["context_length"] == 128000
    assert "model_path" not in values


def test_refusal_filter_says_nothing_for_a_config_that_renders_and_the_renderers_words_otherwise():
    refusal = FilterModule().filters()["sglang_config_refusal"]
    assert refusal({"model_path": "/m", "algorithm": "DFLASH", "drafter_path": "/d", "block_size": 8}, "0.5.23") == ""
    assert "sglang_service_block_size must be a positive integer" in refusal(
        {"model_path": "/m", "algorithm": "DFLASH", "drafter_path": "/d", "block_size": 0}, "0.5.23")
    assert refusal({"model_path": "/m"}, "0.5.23") == ""
    assert "needs an SGLang install carrying the DDTree" in refusal(
        {"model_path": "/m", "algorithm": "DDTREE", "drafter_path": "/d"}, "0.5.23")


def test_server_config_filter_renders_for_the_given_version():
    render = FilterModule().filters()["sglang_server_config"]
    rendered = render({"model_path": "/m", "cuda_graph_max_bs": 8}, "0.5.19")
    assert rendered == {"model-path": "/m", "cuda-graph-max-bs": 8}


def test_refusals_surface_as_filter_errors_naming_the_variable():
    render = FilterModule().filters()["sglang_engine_env"]
    with pytest.raises(AnsibleFilterError, match="sglang_service_drafter_path"):
        render({"model_path": "/m", "algorithm": "DFLASH"}, "0.5.23")
