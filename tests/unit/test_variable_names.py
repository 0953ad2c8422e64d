"""Misspelled variables are refused before anything runs: module_utils/specgate/common/variable_names.py, which each
role's validate entry point runs through the specgate_declared_variables action on its own argument_specs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.common.variable_names import RETIRED, declared_names, role_refusal, unknown_variables

ROOT = Path(__file__).resolve().parents[2]
ROLES = ["preflight", "cuda_toolkit", "sglang_env", "model_weights", "sglang_service", "spec_gate", "spec_sweep"]
SPECS = [yaml.safe_load((ROOT / "roles" / r / "meta" / "argument_specs.yml").read_text()) for r in ROLES]
PREFIXES = [f"{r}_" for r in ROLES]


def test_declared_names_cover_every_entry_point_of_every_role():
    names = declared_names(SPECS)
    assert {"sglang_service_block_size", "model_weights_drafter_repo", "spec_gate_runs"} <= names
    # An entry point other than main (spec_gate's settings, sglang_service's lock) counts too.
    entry_only = set()
    for spec in SPECS:
        main = set(spec["argument_specs"]["main"].get("options") or {})
        for entry, body in spec["argument_specs"].items():
            if entry != "main":
                entry_only |= set((body or {}).get("options") or {}) - main
    assert entry_only <= names


def test_a_prefixed_name_no_role_declares_is_refused_with_the_closest_declared_name():
    found = unknown_variables(["sglang_service_blocksize", "sglang_service_port"], declared_names(SPECS), PREFIXES)
    assert [(f.name, f.suggestion) for f in found] == [("sglang_service_blocksize", "sglang_service_block_size")]


def test_a_misspelled_prefix_is_caught_as_one_slip_from_a_declared_name():
    found = unknown_variables(["sglang_servce_port", "model_weight_dir"], declared_names(SPECS), PREFIXES)
    assert {(f.name, f.suggestion) for f in found} == {
        ("sglang_servce_port", "sglang_service_port"),
        ("model_weight_dir", "model_weights_dir"),
    }


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("block_size", "sglang_service_block_size"),
        ("sglang_block_size", "sglang_service_block_size"),
        ("spec_blocksize", "sglang_service_block_size"),  # tried on the demo: it passed with exit 0
        ("gate_min_accept_length", "spec_gate_min_accept_length"),
        ("tp_size", "sglang_service_tp_size"),
        ("sweep_max_repeats", "spec_sweep_max_repeats"),
    ],
)
def test_an_unprefixed_or_shortened_name_is_refused_suggesting_the_declared_one(name, meant):
    (found,) = unknown_variables([name], declared_names(SPECS), PREFIXES)
    assert (found.name, found.suggestion) == (name, meant)


def test_a_user_name_that_only_ends_like_a_declared_one_passes():
    # Not a stage's words before the suffix (demo_, my_), or a suffix too short to mean one setting (port, user).
    names = ["demo_host_hub_port", "my_block_size", "port", "user", "hf_token_file", "deploy_user", "model_name",
             # the cross-stage facts, whose names end like a stage's own (model_weights_deployment)
             "specgate_deployment", "specgate_release", "specgate_engine", "specgate_weights", "specgate_cuda"]
    assert unknown_variables(names, declared_names(SPECS), PREFIXES) == []


def test_ansible_magic_user_vault_and_private_names_pass():
    names = ["ansible_host", "inventory_hostname", "groups", "vault_hf_token", "vault_sglang_api_key",
             "_sglang_service_layout", "__spec_gate_bench", "specgate_weights", "playbook_dir", "omit"]
    assert unknown_variables(names, declared_names(SPECS), PREFIXES) == []


def test_a_prefixed_name_far_from_every_declared_one_is_refused_without_a_guess():
    (found,) = unknown_variables(["spec_gate_zzzzqqqq_xyzzy_plugh"], declared_names(SPECS), PREFIXES)
    assert found.suggestion is None
    assert "no stage declares" in found.describe()


def test_allowed_names_pass():
    assert unknown_variables(["spec_gate_my_note"], declared_names(SPECS), PREFIXES, ["spec_gate_my_note"]) == []


def _spec(role: str) -> dict:
    return SPECS[ROLES.index(role)]


def test_a_role_refuses_its_own_unknown_names_with_the_fix_and_the_escape_hatch():
    names = ["sglang_service_blocksize", "spec_gate_run", "sglang_service_port"]
    message = role_refusal(names, "sglang_service", _spec("sglang_service"), ROLES)
    assert "sglang_service_blocksize: did you mean sglang_service_block_size?" in message
    assert "the sglang_service stage does not declare" in message
    assert "specgate_allowed_variables" in message
    # spec_gate_run carries spec_gate's prefix: the gate's own check refuses it, not the service's.
    assert "spec_gate_run" not in message
    gate = role_refusal(names, "spec_gate", _spec("spec_gate"), ROLES)
    assert "spec_gate_run: did you mean spec_gate_runs?" in gate
    assert "sglang_service" not in gate
    assert role_refusal(["sglang_service_port"], "sglang_service", _spec("sglang_service"), ROLES) == ""


def test_a_slip_of_one_roles_prefix_is_refused_by_that_role_only():
    for role in ROLES:
        message = role_refusal(["sglang_servce_port"], role, _spec(role), ROLES)
        assert bool(message) == (role == "sglang_service"), (role, message)


def test_another_stages_name_is_no_slip_of_this_ones():
    """Every declared name passes every role's check: names with a sibling's prefix are the sibling's to judge."""
    every_name = declared_names(SPECS)
    for role in ROLES:
        assert role_refusal(every_name, role, _spec(role), ROLES) == "", role


def test_a_retired_name_is_refused_with_what_replaced_it():
    message = role_refusal(["sglang_service_sglang_version"], "sglang_service", _spec("sglang_service"), ROLES)
    assert "renamed to sglang_env_sglang_version" in message
    assert "provides: [ddtree]" in message
    message = role_refusal(["preflight_allowed_variables"], "preflight", _spec("preflight"), ROLES)
    assert "renamed to specgate_allowed_variables" in message
    assert not set(RETIRED) & declared_names(SPECS), "a retired name is declared again"


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for document in yaml.safe_load_all(path.read_text()):
        if not isinstance(document, dict):
            continue
        if "all" in document or any(isinstance(v, dict) and ("hosts" in v or "children" in v)
                                    for v in document.values()):
            names |= _inventory_names(document)
        else:
            names |= set(document)
    return names


def _inventory_names(group: dict) -> set[str]:
    names = set()
    for value in group.values():
        if not isinstance(value, dict):
            continue
        names |= set(value.get("vars") or {})
        for host_vars in (value.get("hosts") or {}).values():
            names |= set(host_vars or {})
        names |= _inventory_names(value.get("children") or {})
    return names


SHIPPED = sorted((ROOT / "configs").rglob("*.yml")) + sorted((ROOT / "inventory").rglob("*.yml"))


def test_the_shipped_files_are_found():
    assert len([p for p in SHIPPED if "profiles" in p.parts]) >= 5
    assert any(p.name == "hosts.yml" for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_profile_preset_sweep_and_inventory_passes_the_misspelling_check(path):
    names = _top_level_names(path)
    assert names, f"{path} sets no variables"
    assert unknown_variables(names, declared_names(SPECS), PREFIXES) == []
