"""Every role's public contract lives in one place and agrees with its defaults (style.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"
ROLES = sorted(p.name for p in ROLES_DIR.glob("*") if (p / "tasks" / "main.yml").is_file())


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {} if path.is_file() else {}


def _spec_options(role: str) -> dict:
    spec = _load(ROLES_DIR / role / "meta" / "argument_specs.yml")
    return (spec.get("argument_specs", {}).get("main", {}) or {}).get("options", {}) or {}


@pytest.mark.parametrize("role", ROLES)
def test_role_has_argument_specs_for_main(role: str) -> None:
    spec = _load(ROLES_DIR / role / "meta" / "argument_specs.yml")
    assert "main" in spec.get("argument_specs", {}), f"roles/{role}/meta/argument_specs.yml has no 'main' entry point"


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_and_defaults_name_the_same_variables(role: str) -> None:
    defaults = set(_load(ROLES_DIR / role / "defaults" / "main.yml"))
    options = set(_spec_options(role))
    assert defaults - options == set(), f"{role}: in defaults/main.yml but not in argument_specs: {defaults - options}"
    required = {name for name, opt in _spec_options(role).items() if opt.get("required")}
    assert options - defaults - required == set(), (
        f"{role}: optional in argument_specs but no default in defaults/main.yml: {options - defaults - required}"
    )


@pytest.mark.parametrize("role", ROLES)
def test_every_public_variable_carries_the_role_prefix(role: str) -> None:
    wrong = [name for name in _spec_options(role) if not name.startswith(f"{role}_")]
    assert wrong == [], f"{role}: variables without the '{role}_' prefix: {wrong}"


@pytest.mark.parametrize("role", ROLES)
def test_every_option_is_typed_and_described(role: str) -> None:
    undocumented = [
        name for name, opt in _spec_options(role).items() if not opt.get("type") or not opt.get("description")
    ]
    assert undocumented == [], f"{role}: options without type or description: {undocumented}"


@pytest.mark.parametrize("role", ROLES)
def test_spec_defaults_match_defaults_file(role: str) -> None:
    defaults = _load(ROLES_DIR / role / "defaults" / "main.yml")
    mismatched = {
        name: (opt["default"], defaults.get(name))
        for name, opt in _spec_options(role).items()
        if "default" in opt and name in defaults and opt["default"] != defaults[name]
    }
    assert mismatched == {}, f"{role}: argument_specs default != defaults/main.yml: {mismatched}"
