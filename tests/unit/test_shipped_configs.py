"""The shipped profiles and presets (configs/) against the renderer's variable set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.common.engine import SUPPORTED_VERSIONS
from ansible.module_utils.specgate.service.sglang_flags import DEPLOYMENT_KEYS, SPEC_KEYS, server_config
from ansible.module_utils.specgate.weights.drafter_facts import dflash_value
from specgate_sim.fixtures import fixture_repos

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
DEMO_MODEL_VARS = ROOT / "inventory" / "demo" / "group_vars" / "sglang_hosts" / "model.yml"
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


def test_every_shipped_file_is_documented_and_every_documented_file_is_shipped():
    table = (CONFIGS / "README.md").read_text()
    documented = set(re.findall(r"^\| `((?:profiles|presets)/[a-z0-9-]+\.yml)`", table, re.M))
    shipped = {str(p.relative_to(CONFIGS)) for p in PROFILES + PRESETS}
    assert PROFILES, "configs/profiles/ ships no profile"
    assert PRESETS, "configs/presets/ ships no preset"
    assert documented == shipped, f"undocumented: {sorted(shipped - documented)}, gone: {sorted(documented - shipped)}"


@pytest.mark.parametrize("path", PROFILES + PRESETS, ids=lambda p: p.name)
def test_files_set_only_deployment_variables(path):
    """A preset sets deployment variables only; a profile those and the drafter it was trained for."""
    allowed = DEPLOYMENT_VARS | ({"model_weights_drafter"} if path in PROFILES else set())
    unknown = set(load(path)) - allowed
    assert not unknown, f"{path.name} sets variables the renderer does not know: {sorted(unknown)}"


@pytest.fixture(scope="module")
def demo_drafters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The demo inventory's drafter catalog: entry name -> the config.json its fixture repo serves."""
    catalog = load(DEMO_MODEL_VARS)["model_weights_drafters"]
    repos = fixture_repos(tmp_path_factory.mktemp("fixtures"))
    return {name: json.loads(repos[entry["repo"]][1][-1].files["config.json"]) for name, entry in catalog.items()}


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_a_profile_serves_a_drafter_trained_for_its_block_size(path, demo_drafters):
    """What a profile swap fetches on the demo: its drafter's config.json says the block size the profile serves."""
    values = load(path)
    if values["sglang_service_algorithm"] == "none":
        assert values["model_weights_drafter"] == "none"
        return
    drafter = values["model_weights_drafter"]
    assert drafter in demo_drafters, f"{path.name} names {drafter}, which the demo's model_weights_drafters lacks"
    assert dflash_value(demo_drafters[drafter], "block_size") == values["sglang_service_block_size"]


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
