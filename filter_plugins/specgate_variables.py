"""Filter: the play's variable names → a refusal naming each misspelled one (logic in variable_names)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import ansible.module_utils

# Same reason as sglang_config.py: a controller-side plugin puts the project's module_utils on the path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.variable_names import (  # noqa: E402 - needs the path set above
    declared_names,
    refusal,
    unknown_variables,
    without_defaults,
)


def specgate_variable_refusal(
    names: Iterable[str], spec_documents: Iterable[dict], roles: Iterable[str], allowed: Iterable[str] = (),
    allow_var: str = "preflight_allowed_variables",
) -> str:
    """`{{ query('varnames', '.+') | specgate_variable_refusal(specs, roles, allowed) }}` → '' or the refusal.

    `spec_documents` are the roles' parsed argument_specs; each role's name plus `_` is a prefix it owns.
    """
    prefixes = [f"{role}_" for role in roles]
    found = unknown_variables(names, declared_names(spec_documents), prefixes, allowed)
    return refusal(found, allow_var) if found else ""


def specgate_spec_without_defaults(options: dict) -> dict:
    """`{{ options | specgate_spec_without_defaults }}`: argument_specs options to check values with, not fill."""
    return without_defaults(options)


class FilterModule:
    def filters(self) -> dict:
        return {"specgate_variable_refusal": specgate_variable_refusal,
                "specgate_spec_without_defaults": specgate_spec_without_defaults}
