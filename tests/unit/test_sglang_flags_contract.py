"""Each deployment setting is declared once, in sglang_service's meta/argument_specs.yml: the renderer's key and type
table is generated from the role (scripts/gen_deployment_schema.py), so nothing here holds copies equal. What is
tested is what the table means: a type changed in the role is the renderer's type, and a value as the command line
passes it renders as its type; the generator refuses a role that does not make a schema, naming what is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.service.sglang_flags import (
    DEPLOYMENT_KEYS,
    DEPLOYMENT_TYPES,
    engine_env,
    server_config,
)
from script_loader import load_script

ROLE = Path(__file__).resolve().parents[2] / "roles" / "sglang_service"


@pytest.fixture(scope="module")
def gen():
    return load_script("gen_deployment_schema")


def _role_copy(tmp_path: Path) -> Path:
    role = tmp_path / "sglang_service"
    for part in ("meta", "vars"):
        shutil.copytree(ROLE / part, role / part)
    return role


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_the_renderer_reads_the_table_the_role_makes(gen):
    assert gen.schema_text() == gen.SCHEMA.read_text(), "run scripts/gen_deployment_schema.py"
    assert list(DEPLOYMENT_KEYS) == list(DEPLOYMENT_TYPES)


def test_a_type_changed_in_argument_specs_is_the_renderers_type_and_the_mappings_order_is_the_render_order(
    gen, tmp_path
):
    role = _role_copy(tmp_path)

    def retype(data: dict) -> None:
        data["argument_specs"]["main"]["options"]["sglang_service_block_size"]["type"] = "str"

    def reorder(data: dict) -> None:
        mapping = data["_sglang_service_deployment_vars"]
        data["_sglang_service_deployment_vars"] = {"port": mapping.pop("port"), **mapping}

    _edit(role / "meta" / "argument_specs.yml", retype)
    _edit(role / "vars" / "main.yml", reorder)
    text = gen.schema_text(role)
    assert '    "block_size": "str",\n' in text
    assert text.index('"port"') < text.index('"model_path"')


@pytest.mark.parametrize(
    ("change", "names"),
    [
        (lambda specs, role_vars: role_vars["_sglang_service_deployment_vars"].update(block_sise="{{ x }}"),
         "sglang_service_block_sise"),
        (lambda specs, role_vars: specs["argument_specs"]["main"]["options"]["sglang_service_port"].pop("type"),
         "sglang_service_port has no type"),
        (lambda specs, role_vars: role_vars.pop("_sglang_service_deployment_vars"), "_sglang_service_deployment_vars"),
    ],
    ids=["key-without-variable", "variable-without-type", "no-mapping"],
)
def test_a_role_that_makes_no_schema_is_refused_naming_what_is_missing(gen, change, names):
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    change(specs, role_vars)
    with pytest.raises(gen.SchemaError, match=names):
        gen.deployment_types(specs, role_vars)


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
