"""Deployment vars → SGLang --config content, per SGLang version (spellings: sglang-reference.md flag history)."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.engine import SUPPORTED_VERSIONS, SglangConfigError, parse_sglang_version
from ansible.module_utils.specgate.service.sglang_flags import DEPLOYMENT_KEYS, engine_env, server_config

pytestmark = pytest.mark.host

TARGET = "/models/kimi-k2.6"
DRAFTER = "/models/kimi-k2.6-dflash"


def dflash(**overrides):
    deployment = {"model_path": TARGET, "algorithm": "DFLASH", "drafter_path": DRAFTER, "block_size": 8}
    deployment.update(overrides)
    return deployment


def ddtree(**overrides):
    return dflash(algorithm="DDTREE", ddtree_budget=8, ddtree_topk=4, **overrides)


def test_null_values_are_not_rendered_so_sglang_keeps_its_defaults():
    deployment = dict.fromkeys(DEPLOYMENT_KEYS)
    deployment["model_path"] = TARGET
    assert server_config(deployment, "0.5.23") == {"model-path": TARGET}


def test_every_rendered_key_uses_dashes_and_values_keep_their_types():
    config = server_config(
        dflash(port=30000, tp_size=8, mem_fraction_static=0.85, enable_metrics=True, trust_remote_code=True),
        "0.5.23",
    )
    assert all("_" not in key for key in config)
    assert config["port"] == 30000
    assert config["mem-fraction-static"] == 0.85
    assert config["enable-metrics"] is True
    assert config["speculative-dflash-block-size"] == 8


@pytest.mark.parametrize(
    ("version", "key"),
    [
        ("0.5.11", "speculative-dflash-draft-window-size"),
        ("0.5.15", "speculative-dflash-draft-window-size"),
        ("0.5.19", "speculative-dflash-draft-window-size"),
        ("0.5.23", "speculative-draft-window-size"),
    ],
)
def test_draft_window_is_spelled_as_each_versions_config_loader_accepts(version, key):
    config = server_config(dflash(draft_window=2048), version)
    assert config[key] == 2048
    assert {"speculative-draft-window-size", "speculative-dflash-draft-window-size"} & set(config) == {key}


def test_no_draft_window_renders_no_window_key():
    config = server_config(dflash(draft_window=None), "0.5.23")
    assert not [key for key in config if "window" in key]


@pytest.mark.parametrize(
    ("version", "key"),
    [("0.5.11", "cuda-graph-max-bs"), ("0.5.15", "cuda-graph-max-bs"), ("0.5.19", "cuda-graph-max-bs"),
     ("0.5.23", "cuda-graph-max-bs-decode")],
)
def test_cuda_graph_max_bs_spelling_per_version(version, key):
    assert server_config(dflash(cuda_graph_max_bs=16), version)[key] == 16


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.5.11", {"disable-cuda-graph": True, "disable-piecewise-cuda-graph": True}),
        ("0.5.15", {"cuda-graph-backend-decode": "disabled", "disable-prefill-cuda-graph": True}),
        ("0.5.19", {"cuda-graph-backend-decode": "disabled", "disable-prefill-cuda-graph": True}),
        ("0.5.23", {"cuda-graph-backend-decode": "disabled", "cuda-graph-backend-prefill": "disabled"}),
    ],
)
def test_cuda_graph_off_turns_off_decode_and_prefill_graphs_with_keys_the_loader_accepts(version, expected):
    """Decode and prefill both: the variable means the same on every version (tests/peer checks the resolved
    values)."""
    config = server_config(dflash(cuda_graph=False), version)
    assert {key: config[key] for key in config if "graph" in key} == expected
    assert "disable-cuda-graph" not in config or version == "0.5.11"


def test_cuda_graph_on_renders_nothing_because_it_is_sglangs_default():
    assert not [key for key in server_config(dflash(cuda_graph=True), "0.5.23") if "cuda-graph" in key]


def test_cuda_graph_max_bs_with_graphs_off_is_refused():
    with pytest.raises(SglangConfigError, match="sglang_service_cuda_graph_max_bs"):
        server_config(dflash(cuda_graph=False, cuda_graph_max_bs=16), "0.5.23")


def test_attention_dp_is_attn_dp_size_on_0_5_23():
    config = server_config(dflash(tp_size=8, attn_dp_size=8, enable_dp_lm_head=True), "0.5.23")
    assert config["attn-dp-size"] == 8
    assert "enable-dp-attention" not in config
    assert "dp-size" not in config


@pytest.mark.parametrize("version", ["0.5.11", "0.5.15", "0.5.19"])
def test_attention_dp_is_dp_size_with_enable_dp_attention_before_0_5_23(version):
    config = server_config({"model_path": TARGET, "tp_size": 8, "attn_dp_size": 8, "enable_dp_lm_head": True}, version)
    assert config["dp-size"] == 8
    assert config["enable-dp-attention"] is True
    assert "attn-dp-size" not in config


def test_separate_dp_and_attention_dp_widths_are_refused_where_sglang_has_one_number():
    with pytest.raises(SglangConfigError, match="sglang_service_dp_size"):
        server_config({"model_path": TARGET, "tp_size": 8, "dp_size": 2, "attn_dp_size": 8}, "0.5.19")


@pytest.mark.parametrize("version", ["0.5.11", "0.5.15", "0.5.19"])
def test_dflash_with_attention_dp_is_refused_before_0_5_23(version):
    with pytest.raises(SglangConfigError, match=r"sglang_service_attn_dp_size must be null or 1.*0\.5\.23"):
        server_config(dflash(tp_size=8, attn_dp_size=8, enable_dp_lm_head=True), version)


def test_attention_dp_with_dflash_needs_dp_lm_head():
    with pytest.raises(SglangConfigError, match="sglang_service_enable_dp_lm_head"):
        server_config(dflash(tp_size=8, attn_dp_size=8), "0.5.23")


def test_dflash_refuses_pipeline_parallelism():
    with pytest.raises(SglangConfigError, match="sglang_service_pp_size"):
        server_config(dflash(pp_size=2), "0.5.23")


def test_block_size_and_draft_tokens_must_agree_for_dflash():
    with pytest.raises(SglangConfigError, match="sglang_service_num_draft_tokens"):
        server_config(dflash(block_size=8, num_draft_tokens=16), "0.5.23")


def test_draft_tokens_alone_render_as_num_draft_tokens_for_dflash():
    config = server_config(dflash(block_size=None, num_draft_tokens=16), "0.5.23")
    assert config["speculative-num-draft-tokens"] == 16
    assert "speculative-dflash-block-size" not in config


def test_window_smaller_than_block_is_refused():
    with pytest.raises(SglangConfigError, match="sglang_service_draft_window"):
        server_config(dflash(block_size=16, draft_window=8), "0.5.23")


@pytest.mark.parametrize("value", [0, -1, True, "eight", "8.5", 8.5, [8]])
def test_block_size_must_be_a_positive_integer(value):
    with pytest.raises(SglangConfigError, match="sglang_service_block_size must be a positive integer"):
        server_config(dflash(block_size=value), "0.5.23")


@pytest.mark.parametrize("value", ["8", " 8", 8.0])
def test_block_size_is_read_as_argument_specs_read_it(value):
    """`-e sglang_service_block_size=8` arrives as a string; argument_specs take it as 8, and so does the renderer."""
    assert server_config(dflash(block_size=value), "0.5.23")["speculative-dflash-block-size"] == 8


@pytest.mark.parametrize(
    ("value", "rendered"),
    [(131072, 131072), ("131072", 131072), ("128k", 128000), ("128Ki", 131072), ("25.6k", 25600), ("1M", 1000000)],
)
def test_context_length_takes_sglangs_short_form(value, rendered):
    assert server_config({"model_path": "/m", "context_length": value}, "0.5.19")["context-length"] == rendered


@pytest.mark.parametrize("value", ["128K", "1.5Ki", "long", 0, True, 12.5])
def test_context_length_that_sglang_would_not_read_is_refused_by_name(value):
    with pytest.raises(SglangConfigError, match="sglang_service_context_length"):
        server_config({"model_path": "/m", "context_length": value}, "0.5.23")


def test_every_type_arrives_as_the_command_line_spells_it():
    rendered = server_config(
        {"model_path": "/m", "port": "30001", "enable_metrics": "yes", "trust_remote_code": "false",
         "mem_fraction_static": "0.85", "chunked_prefill_size": "-1", "random_seed": "0"},
        "0.5.23",
    )
    assert rendered == {"model-path": "/m", "port": 30001, "enable-metrics": True, "trust-remote-code": False,
                        "mem-fraction-static": 0.85, "chunked-prefill-size": -1, "random-seed": 0}


@pytest.mark.parametrize("algorithm", ["DFLASH", "DDTREE", "EAGLE3"])
def test_algorithms_with_a_separate_drafter_need_its_path(algorithm):
    with pytest.raises(SglangConfigError, match="sglang_service_drafter_path is required"):
        server_config(dflash(algorithm=algorithm, drafter_path=None, block_size=None), "0.5.23+ddtree")


def test_ddtree_renders_algorithm_budget_and_block_size_on_a_patched_install():
    config = server_config(ddtree(), "0.5.23+ddtree")
    assert config["speculative-algorithm"] == "DDTREE"
    assert config["speculative-ddtree-budget"] == 8
    assert config["speculative-dflash-block-size"] == 8


def test_ddtree_top_k_reaches_the_engine_through_its_environment():
    assert engine_env(ddtree(), "0.5.23+ddtree") == {"SGLANG_DDTREE_MAX_TOPK": "4"}
    assert not [key for key in server_config(ddtree(), "0.5.23+ddtree") if "topk" in key]


def test_ddtree_on_a_stock_release_is_refused_naming_the_algorithm_and_the_fix():
    refusal = r"sglang_service_algorithm DDTREE.*SGLang 0\.5\.23\) does not have it.*provides: \[ddtree\]"
    with pytest.raises(SglangConfigError, match=refusal):
        server_config(ddtree(), "0.5.23")


def test_engine_env_is_empty_without_ddtree():
    assert engine_env(dflash(), "0.5.23") == {}


@pytest.mark.parametrize(("key", "value"), [("ddtree_budget", 8), ("ddtree_topk", 4), ("num_steps", 3)])
def test_knobs_of_another_algorithm_are_refused_not_silently_dropped(key, value):
    with pytest.raises(SglangConfigError, match=f"sglang_service_{key} applies to"):
        server_config(dflash(**{key: value}), "0.5.23")


def test_draft_tokens_are_refused_for_ddtree_whose_verify_width_comes_from_the_budget():
    with pytest.raises(SglangConfigError, match="sglang_service_num_draft_tokens applies to DFLASH/EAGLE3/NEXTN"):
        server_config(ddtree(num_draft_tokens=9), "0.5.23+ddtree")


def test_no_speculation_renders_no_speculative_flag_even_with_a_drafter_on_disk():
    config = server_config({"model_path": TARGET, "algorithm": "none", "drafter_path": DRAFTER}, "0.5.23")
    assert not [key for key in config if key.startswith("speculative")]


def test_eagle3_renders_steps_topk_and_draft_tokens():
    config = server_config(
        {"model_path": TARGET, "algorithm": "EAGLE3", "drafter_path": DRAFTER, "num_steps": 3, "eagle_topk": 1,
         "num_draft_tokens": 4},
        "0.5.19",
    )
    assert config["speculative-num-steps"] == 3
    assert config["speculative-eagle-topk"] == 1
    assert config["speculative-num-draft-tokens"] == 4


def test_extra_args_are_rendered_last():
    config = server_config(dflash(extra_args={"enable-eplb": True, "deepep-mode": "auto"}), "0.5.23")
    assert list(config)[-2:] == ["enable-eplb", "deepep-mode"]


@pytest.mark.parametrize("name", ["--enable-eplb", "enable_eplb", "Enable-EPLB", ""])
def test_extra_args_must_be_spelled_like_sglang_flags(name):
    with pytest.raises(SglangConfigError, match="sglang_service_extra_args"):
        server_config(dflash(extra_args={name: True}), "0.5.23")


def test_extra_args_cannot_override_a_flag_rendered_from_a_variable():
    with pytest.raises(SglangConfigError, match="already rendered"):
        server_config(dflash(tp_size=8, extra_args={"tp-size": 4}), "0.5.23")


def test_unknown_deployment_keys_are_refused():
    with pytest.raises(SglangConfigError, match="unknown deployment keys"):
        server_config(dflash(blocksize=8), "0.5.23")


def test_missing_model_path_is_refused():
    with pytest.raises(SglangConfigError, match="sglang_service_model_path is required"):
        server_config({"algorithm": "none"}, "0.5.23")


@pytest.mark.parametrize("fraction", [0, 1, 1.5, "1.5", True, "most"])
def test_mem_fraction_must_be_between_zero_and_one(fraction):
    with pytest.raises(SglangConfigError, match="sglang_service_mem_fraction_static"):
        server_config(dflash(mem_fraction_static=fraction), "0.5.23")


def test_unknown_algorithm_is_refused():
    with pytest.raises(SglangConfigError, match="sglang_service_algorithm must be one of"):
        server_config(dflash(algorithm="dflash"), "0.5.23")


@pytest.mark.parametrize("version", ["0.5.10", "0.5.22", "0.5.24", "0.6.0"])
def test_unsupported_sglang_versions_are_refused_with_the_supported_list(version):
    with pytest.raises(SglangConfigError, match=r"supported: 0\.5\.11, 0\.5\.15, 0\.5\.19, 0\.5\.23"):
        server_config(dflash(), version)


@pytest.mark.parametrize("version", ["0.5.23.post1", "0.5.19.post2", "0.5.23.post1+ddtree"])
def test_post_release_is_refused_naming_its_release_and_why(version):
    """Decided in issue 13: a post-release does not borrow its release's spellings; the refusal says so."""
    release = r"0\.5\.(23|19)"
    with pytest.raises(SglangConfigError, match=rf"post-release of {release}.*main branch.*Pin sglang=={release}"):
        parse_sglang_version(version)


@pytest.mark.parametrize("version", ["0.5.24rc1", "0.5.24.dev0", "0.5.23a1"])
def test_pre_release_and_dev_builds_are_refused_as_such(version):
    with pytest.raises(SglangConfigError, match="pre-release or development build"):
        parse_sglang_version(version)


def test_0_5_15_renders_exactly_as_0_5_19():
    for deployment in (dflash(draft_window=2048), dflash(cuda_graph=False), dflash(cuda_graph_max_bs=16)):
        assert server_config(deployment, "0.5.15") == server_config(deployment, "0.5.19")


@pytest.mark.parametrize("text", ["0.5", "v0.5.23", "latest", None, 5])
def test_malformed_versions_are_refused(text):
    with pytest.raises(SglangConfigError, match="not an SGLang version"):
        parse_sglang_version(text)


def test_an_unknown_local_label_is_refused_naming_the_one_label_specgate_knows():
    with pytest.raises(SglangConfigError, match=r"local label \+cu130; specgate renders for releases"):
        parse_sglang_version("0.5.23+cu130")


def test_supported_versions_have_rules():
    assert SUPPORTED_VERSIONS == ("0.5.11", "0.5.15", "0.5.19", "0.5.23")
    assert parse_sglang_version("0.5.19+ddtree").ddtree
    assert not parse_sglang_version("0.5.19").ddtree


@pytest.mark.parametrize(
    ("version", "backend"),
    [("0.5.11", "ascend"), ("0.5.15", "trtllm_mha"), ("0.5.23", "flashmla"), ("0.5.19", "intel_xpu")],
)
def test_a_draft_backend_that_sglang_would_replace_is_refused_per_version(version, backend):
    with pytest.raises(SglangConfigError, match=rf"sglang_service_draft_attention_backend '{backend}' is not a draft "
                                                rf"attention backend SGLang {version} runs DFLASH with"):
        server_config(dflash(draft_attention_backend=backend), version)


@pytest.mark.parametrize(("version", "backend"), [("0.5.11", "fa4"), ("0.5.15", "ascend"), ("0.5.19", "trtllm_mha"),
                                                  ("0.5.23", "intel_xpu")])
def test_a_draft_backend_sglang_keeps_renders(version, backend):
    config = server_config(dflash(draft_attention_backend=backend), version)
    assert config["speculative-draft-attention-backend"] == backend
