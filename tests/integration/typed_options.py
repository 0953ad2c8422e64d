"""Every int, float and bool option an entry point declares with a literal default, as a `-e` string (as users pass
it on the command line): the typed-settings tests run each role's validation with them."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def typed_defaults_as_strings(role: str, entry: str = "main") -> dict[str, str]:
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    found = {}
    for name, option in (spec["argument_specs"][entry].get("options") or {}).items():
        kind, default = option.get("type"), option.get("default")
        if kind in ("int", "float", "bool") and default is not None and "{{" not in str(default):
            found[name] = str(default).lower() if kind == "bool" else str(default)
    return found
