"""Catch misspelled variables before a play changes anything.

Ansible ignores a variable no task reads, so `sglang_service_blocksize: 16` (for `sglang_service_block_size`)
leaves the host as it was while the user believes it was reconfigured. A name is refused when it carries a
stage's prefix but no stage declares it, or when it is one small slip away from a declared name (a misspelled
prefix: `sglang_servce_port`). Names starting with `_` are the roles' private variables and are left alone.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

# How alike an unprefixed name must be to a declared one to be taken for its misspelling (difflib's ratio):
# `sglang_servce_port` ~ `sglang_service_port` is 0.97, an unrelated user variable such as
# `vault_sglang_api_key` ~ `sglang_service_api_key` 0.71.
NEAR_MISS_RATIO = 0.9
# How alike a suggestion for a prefixed unknown name must be (a looser bar: the prefix already says which stage).
SUGGESTION_RATIO = 0.6


@dataclass(frozen=True)
class UnknownVariable:
    name: str
    suggestion: str | None

    def describe(self) -> str:
        hint = f"did you mean {self.suggestion}?" if self.suggestion else "no stage declares a variable like it"
        return f"{self.name}: {hint}"


def declared_names(spec_documents: Iterable[dict]) -> set[str]:
    """Every option name of every entry point in these parsed `meta/argument_specs.yml` documents."""
    names: set[str] = set()
    for document in spec_documents:
        for entry in ((document or {}).get("argument_specs") or {}).values():
            names.update((entry or {}).get("options") or {})
    return names


def without_defaults(options: dict) -> dict:
    """argument_specs options with their `default`s left out, suboptions too.

    preflight checks the values the play holds against the later stages' specs; a stage whose role is not in the
    play has no value, and its spec's default may be a template over another stage's variable (the block size, the
    token) that only means something with that stage's defaults loaded, so it is not applied there.
    """
    stripped = {}
    for name, option in options.items():
        kept = {key: value for key, value in (option or {}).items() if key != "default"}
        if isinstance(kept.get("options"), dict):
            kept["options"] = without_defaults(kept["options"])
        stripped[name] = kept
    return stripped


def unknown_variables(
    names: Iterable[str], known: Iterable[str], prefixes: Iterable[str], allowed: Iterable[str] = ()
) -> list[UnknownVariable]:
    """The names among `names` that look meant for a stage but that no stage declares, sorted by name."""
    known_set = set(known) | set(allowed)
    known_sorted = sorted(known_set)
    prefix_tuple = tuple(prefixes)
    found = []
    for name in sorted(set(names)):
        if name.startswith("_") or name in known_set:
            continue
        if prefix_tuple and name.startswith(prefix_tuple):
            close = difflib.get_close_matches(name, known_sorted, n=1, cutoff=SUGGESTION_RATIO)
            found.append(UnknownVariable(name, close[0] if close else None))
            continue
        close = difflib.get_close_matches(name, known_sorted, n=1, cutoff=NEAR_MISS_RATIO)
        if close:
            found.append(UnknownVariable(name, close[0]))
    return found


def refusal(found: list[UnknownVariable], allow_var: str) -> str:
    """One message for every unknown name, with the fix."""
    lines = "; ".join(item.describe() for item in found)
    return (
        f"variables no stage declares (Ansible would ignore them and leave the host as it is): {lines}. "
        f"Fix the spelling (README: variable reference), or list a variable of your own in {allow_var}"
    )
