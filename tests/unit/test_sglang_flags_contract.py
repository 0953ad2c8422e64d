"""Each deployment setting is declared once, in sglang_service's meta/argument_specs.yml: the renderer's key and
type tables, the role's deployment mapping (vars/main.yml) and its defaults are held equal to it here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.service.sglang_flags import (
    DEPLOYMENT_KEYS,
    DEPLOYMENT_TYPES,
    VAR_PREFIX,
    engine_env,
    server_config,
)

ROLE = Path(__file__).resolve().parents[2] / "roles" / "sglang_service"
OPTIONS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
DEPLOYMENT_MAPPING = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_sglang_service_deployment_vars"]
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())


def test_the_renderer_knows_each_key_once_and_types_every_one():
    assert len(set(DEPLOYMENT_KEYS)) == len(DEPLOYMENT_KEYS)
    assert list(DEPLOYMENT_TYPES) == list(DEPLOYMENT_KEYS)


@pytest.mark.parametrize("key", DEPLOYMENT_KEYS)
def test_each_deployment_key_has_its_variable_typed_as_the_renderer_reads_it(key):
    option = OPTIONS.get(VAR_PREFIX + key)
    assert option is not None, f"argument_specs declare no {VAR_PREFIX}{key}"
    assert option["type"] == DEPLOYMENT_TYPES[key], f"{VAR_PREFIX}{key}: argument_specs and the renderer disagree"
    assert VAR_PREFIX + key in DEFAULTS


def test_the_role_passes_exactly_the_renderer_keys():
    assert list(DEPLOYMENT_MAPPING) == list(DEPLOYMENT_KEYS)


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
