"""Filters: package lines read as pip reads them (module_utils/specgate/env/pins.py, packaging.requirements), for
the checks that judge pins on the controller.

    {{ sglang_router_packages | specgate_unpinned }}                 lines that pin no exact version (or do not parse)
    {{ sglang_router_packages | specgate_requirement_names('sglang_router_packages') }}   each line's canonical name
    {{ installed | sglang_env_install_refusal(specgate_engine) }}    '' or the sentence naming the variable to fix
"""

from __future__ import annotations

from collections.abc import Iterable

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.env.pins import install_refusal, is_pinned, name_of
from packaging.utils import canonicalize_name


def unpinned(lines: Iterable[str]) -> list[str]:
    def pinned(line: str) -> bool:
        try:
            return is_pinned(line)
        except ValueError:
            return False

    return [line for line in lines if not pinned(line)]


def requirement_names(lines: Iterable[str], variable: str) -> list[str]:
    """Each line's canonical name; a line pip cannot read fails naming ``variable``, the list it came from."""
    return [canonicalize_name(name_of(line, variable)) for line in lines]


class FilterModule:
    def filters(self) -> dict:
        return {
            "specgate_unpinned": unpinned,
            "specgate_requirement_names": requirement_names,
            "sglang_env_install_refusal": install_refusal,
        }
