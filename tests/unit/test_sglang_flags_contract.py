"""Each deployment setting is declared once, in sglang_service's meta/argument_specs.yml: the renderer's key and type
table is generated from the role (scripts/gen_deployment_schema.py), so nothing here holds copies equal. What is
tested is what the table means: a type changed in the role is the renderer's type, and a value as the command line
passes it renders as its type; the generator refuses a role that does not make a schema, naming what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.service.sglang_flags import (
    DEPLOYMENT_KEYS,
    DEPLOYMENT_TYPES,
    deployment_from,
    deployment_var_names,
    engine_env,
    server_config,
)
from script_loader import load_script

ROLE = Path(__file__).resolve().parents[2] / "roles" / "sglang_service"


@pytest.fixture(scope="module")
def gen():
    return load_script("gen_deployment_schema")


def _specs() -> dict:
    return yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())


def test_the_renderer_reads_the_table_the_role_makes(gen):
    assert gen.schema_text() == gen.SCHEMA.read_text(), "run scripts/gen_deployment_schema.py"
    assert list(DEPLOYMENT_KEYS) == list(DEPLOYMENT_TYPES)


def test_a_type_changed_in_argument_specs_is_the_renderers_type_and_the_entry_points_order_is_the_render_order(gen):
    specs = _specs()
    options = specs["argument_specs"]["deployment"]["options"]
    options["sglang_service_block_size"]["type"] = "str"
    specs["argument_specs"]["deployment"]["options"] = {"sglang_service_port": options.pop("sglang_service_port"),
                                                        **options}
    text = gen.render(gen.deployment_types(specs))
    assert '    "block_size": "str",\n' in text
    assert text.index('"port"') < text.index('"model_path"')


def test_every_entry_point_that_renders_takes_the_deployment_settings_first_and_in_render_order():
    entry_points = _specs()["argument_specs"]
    keys = [f"sglang_service_{key}" for key in DEPLOYMENT_KEYS]
    for name in ("main", "validate", "render", "candidate"):
        assert list(entry_points[name]["options"])[: len(keys)] == keys, name


@pytest.mark.parametrize(
    ("change", "names"),
    [
        (lambda options: options.update(block_size={"type": "int"}), "block_size is not named sglang_service_<key>"),
        (lambda options: options["sglang_service_port"].pop("type"), "sglang_service_port has no type"),
        (lambda options: options.clear(), "no deployment entry point with options"),
    ],
    ids=["unprefixed-option", "variable-without-type", "no-options"],
)
def test_a_role_that_makes_no_schema_is_refused_naming_what_is_missing(gen, change, names):
    specs = _specs()
    change(specs["argument_specs"]["deployment"]["options"])
    with pytest.raises(gen.SchemaError, match=names):
        gen.deployment_types(specs)


def test_the_deployment_is_read_from_its_variables_by_name_in_render_order():
    names = deployment_var_names(["unrelated", *reversed([f"sglang_service_{key}" for key in DEPLOYMENT_KEYS])])
    assert names == [f"sglang_service_{key}" for key in DEPLOYMENT_KEYS]
    deployment = deployment_from(names, list(range(len(names))))
    assert list(deployment) == list(DEPLOYMENT_KEYS)
    assert deployment["block_size"] == DEPLOYMENT_KEYS.index("block_size")


def test_a_deployment_variable_without_a_default_is_named():
    defined = [f"sglang_service_{key}" for key in DEPLOYMENT_KEYS if key != "draft_window"]
    with pytest.raises(SglangConfigError, match=r"sglang_service_draft_window undefined: .*defaults/main\.yml"):
        deployment_var_names(defined)
    with pytest.raises(SglangConfigError, match="2 deployment variable names but 1 values"):
        deployment_from(["sglang_service_port", "sglang_service_host"], [1])


def test_every_setting_outside_a_group_renders_as_its_own_flag_spelled_with_dashes():
    """The one-to-one flags are derived from the keys: SGLang spells each as the key with dashes."""
    deployment = {key: None for key in DEPLOYMENT_KEYS} | {
        "model_path": "/m", "served_model_name": "m", "host": "h", "port": 1, "tp_size": 2, "ep_size": 2, "pp_size": 1,
        "moe_a2a_backend": "deepep", "attention_backend": "triton", "context_length": 4096,
        "mem_fraction_static": 0.8, "max_running_requests": 4, "chunked_prefill_size": 512, "kv_cache_dtype": "auto",
        "sampling_backend": "pytorch", "enable_metrics": True, "trust_remote_code": True, "tool_call_parser": "kimi_k2",
        "reasoning_parser": "kimi_k2", "random_seed": 1, "enable_dp_lm_head": True,
    }
    config = server_config(deployment, "0.5.23")
    for key, value in deployment.items():
        if value is not None:
            assert config[key.replace("_", "-")] == value, key


@pytest.mark.parametrize(
    "key", [k for k in DEPLOYMENT_KEYS if DEPLOYMENT_TYPES[k] == "int" and k not in ("port",)]
)
def test_an_integer_as_the_command_line_passes_it_renders_as_that_integer(key):
    """What argument_specs accept for an int (a string of digits, as `-e key=4` passes it) the renderer accepts too."""
    deployment, version = {"model_path": "/m", key: "4"}, "0.5.23"
    if key in ("block_size", "draft_window", "num_draft_tokens"):
        deployment |= {"algorithm": "DFLASH", "drafter_path": "/d"}
        if key != "block_size":
            deployment["block_size"] = 4
    elif key in ("ddtree_budget", "ddtree_topk"):
        deployment |= {"algorithm": "DDTREE", "drafter_path": "/d"}
        version = "0.5.23+ddtree"
    elif key in ("num_steps", "eagle_topk"):
        deployment |= {"algorithm": "EAGLE3", "drafter_path": "/d"}
    elif key == "attn_dp_size":
        deployment["enable_dp_lm_head"] = True
    rendered = server_config(deployment, version) | engine_env(deployment, version)
    assert 4 in rendered.values() or rendered.get("SGLANG_DDTREE_MAX_TOPK") == "4", rendered
