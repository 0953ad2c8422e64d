"""The shipped profiles and presets (configs/) against the renderer's variable set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.service.sglang_flags import (
    DEPLOYMENT_KEYS,
    SPEC_KEYS,
    SUPPORTED_VERSIONS,
    server_config,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PROFILES = sorted((CONFIGS / "profiles").glob("*.yml"))
PRESETS = sorted((CONFIGS / "presets").glob("*.yml"))
DEPLOYMENT_VARS = {f"sglang_service_{key}" for key in DEPLOYMENT_KEYS}


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def deployment(*paths: Path) -> dict:
    merged = {"model_path": "/models/target", "drafter_path": "/models/drafter"}
    for path in paths:
        merged.update({k.removeprefix("sglang_service_"): v for k, v in load(path).items()
                       if k.startswith("sglang_service_")})
    return merged


def test_the_shipped_set_is_the_documented_set():
    assert [p.stem for p in PROFILES] == ["bs16-b32-t8", "bs8-b4-t4", "bs8-b8-t4", "dflash-bs16", "dflash-bs8",
                                          "no-spec"]
    assert [p.stem for p in PRESETS] == ["b300-tp8", "ct200-ep8"]
    table = (CONFIGS / "README.md").read_text()
    assert set(re.findall(r"^\| `profiles/([a-z0-9-]+)\.yml`", table, re.M)) == {p.stem for p in PROFILES}


@pytest.mark.parametrize("path", PROFILES + PRESETS, ids=lambda p: p.name)
def test_files_set_only_deployment_variables(path):
    """A preset sets deployment variables only; a profile those and the drafter it was trained for."""
    allowed = DEPLOYMENT_VARS | ({"model_weights_drafter"} if path in PROFILES else set())
    unknown = set(load(path)) - allowed
    assert not unknown, f"{path.name} sets variables the renderer does not know: {sorted(unknown)}"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_a_profile_names_the_drafter_trained_for_its_block_size(path):
    values = load(path)
    if values["sglang_service_algorithm"] == "none":
        assert values["model_weights_drafter"] == "none"
    else:
        assert values["model_weights_drafter"] == f"dflash-b{values['sglang_service_block_size']}"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_profiles_set_every_speculative_variable(path):
    values = load(path)
    missing = {f"sglang_service_{key}" for key in (*SPEC_KEYS, "algorithm")} - set(values)
    assert not missing, f"{path.name} leaves {sorted(missing)} to whatever the inventory held"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_every_profile_and_preset_renders_for_every_supported_version(profile, preset, version):
    values = deployment(profile, preset)
    target = f"{version}+ddtree" if values["algorithm"] == "DDTREE" else version
    config = server_config(values, target)
    assert config["tp-size"] == 8
    assert config.get("speculative-dflash-block-size") == values["block_size"]


def test_readme_documents_exactly_the_deployment_variables():
    documented = set(re.findall(r"^\| `(sglang_service_[a-z0-9_]+)`", (CONFIGS / "README.md").read_text(), re.M))
    assert documented == DEPLOYMENT_VARS


def test_the_configs_readme_documents_exactly_the_deployment_variables():
    """configs/README.md maps each deployment variable to its SGLang flag by hand; it may not drift from the
    renderer's keys (declared in sglang_service's argument_specs, held equal by test_sglang_flags_contract)."""
    text = (CONFIGS / "README.md").read_text()
    documented = set(re.findall(r"^\| `(sglang_service_[a-z0-9_]+)` \|", text, flags=re.MULTILINE))
    missing, extra = sorted(DEPLOYMENT_VARS - documented), sorted(documented - DEPLOYMENT_VARS)
    assert documented == DEPLOYMENT_VARS, f"missing: {missing}, not a deployment variable: {extra}"
