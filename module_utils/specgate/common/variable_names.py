"""Catch misspelled variables before a play changes anything.

Ansible ignores a variable no task reads, so `sglang_service_blocksize: 16` (for `sglang_service_block_size`)
leaves the host as it was while the user believes it was reconfigured. Each role checks its own names (its
`validate` entry point, before anything changes): a name is refused when it carries the role's prefix but the
role does not declare it, when it is one small slip away from a name the role declares (a misspelled prefix:
`sglang_servce_port`), or when it shortens one (`block_size`, `sglang_block_size`, `spec_blocksize` for
`sglang_service_block_size`). Names starting with `_` are the roles' private variables and are left alone; names a
release renamed or retired are refused with what replaced them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# How alike an unprefixed name must be to a declared one to be taken for its misspelling (difflib's ratio):
# `sglang_servce_port` ~ `sglang_service_port` is 0.97, an unrelated user variable such as
# `vault_sglang_api_key` ~ `sglang_service_api_key` 0.71.
NEAR_MISS_RATIO = 0.9
# How alike a suggestion for a prefixed unknown name must be (a looser bar: the prefix already says which stage).
SUGGESTION_RATIO = 0.6


# The words of the stages' prefixes: a shortened name drops some of them (`sglang_block_size`, `spec_blocksize`,
# `gate_min_accept_length`) or all (`block_size`).
STAGE_WORDS = frozenset({"cuda", "toolkit", "sglang", "env", "model", "weights", "service", "spec", "gate", "sweep",
                         "router", "fleet", "rollout", "preflight"})
# The cross-stage facts' namespace (specgate_deployment, specgate_release...): never a shortened stage setting.
SHARED_PREFIX = "specgate_"
# A shortened name's remainder must be at least this long (without underscores) to be taken for a declared name:
# `port` or `user` alone say too little to be a setting of one stage.
SHORTENED_MIN_LENGTH = 6


# Names users may still have in their inventory, and what replaced them (the refusal says so).
RETIRED: dict[str, str] = {
    "sglang_service_sglang_version": (
        "renamed to sglang_env_sglang_version (the engine's release is the venv stage's fact); DDTree is "
        "declared on its patch (sglang_env_patches: provides: [ddtree]) or git source (sglang_env_git_provides)"
    ),
    "preflight_allowed_variables": "renamed to specgate_allowed_variables",
    "preflight_validate_roles": "retired: each stage checks its own variables in its validate entry point",
    "preflight_declaring_roles": "retired: each stage checks its own variables in its validate entry point",
    "preflight_nnodes": "retired: a deployment spans one host",
}


@dataclass(frozen=True)
class UnknownVariable:
    name: str
    suggestion: str | None
    retired: str | None = None

    def describe(self) -> str:
        if self.retired:
            return f"{self.name}: {self.retired}"
        hint = f"did you mean {self.suggestion}?" if self.suggestion else "no stage declares a variable like it"
        return f"{self.name}: {hint}"


def declared_names(spec_documents: Iterable[dict]) -> set[str]:
    """Every option name of every entry point in these parsed `meta/argument_specs.yml` documents."""
    names: set[str] = set()
    for document in spec_documents:
        for entry in ((document or {}).get("argument_specs") or {}).values():
            names.update((entry or {}).get("options") or {})
    return names


def shortened_match(name: str, suffixes: Mapping[str, str]) -> str | None:
    """The declared name that ``name`` shortens: ``name`` less some leading words of the stages' prefixes
    (STAGE_WORDS) is a declared name's suffix, underscores aside (`sglang_block_size`, `spec_blocksize` and
    `block_size` all shorten `sglang_service_block_size`). ``suffixes``: declared_suffixes of the names looked in.
    None when it shortens none."""
    if name.startswith(SHARED_PREFIX):
        return None
    words = name.split("_")
    for dropped in range(len(words)):
        if dropped and words[dropped - 1] not in STAGE_WORDS:
            return None
        rest = "".join(words[dropped:])
        if len(rest) >= SHORTENED_MIN_LENGTH and rest in suffixes:
            return suffixes[rest]
    return None


def declared_suffixes(known: Iterable[str], prefixes: Iterable[str]) -> dict[str, str]:
    """Each declared name's suffix after its stage prefix, underscores removed -> the declared name (the first
    prefix's name where two stages share a suffix)."""
    suffixes: dict[str, str] = {}
    for prefix in prefixes:
        for name in sorted(known, reverse=True):
            if name.startswith(prefix):
                suffixes.setdefault(name[len(prefix):].replace("_", ""), name)
    return suffixes


def unknown_variables(
    names: Iterable[str], known: Iterable[str], prefixes: Iterable[str], allowed: Iterable[str] = (),
    others: Iterable[str] = (),
) -> list[UnknownVariable]:
    """The names among `names` that look meant for a stage owning `prefixes` but that it does not declare
    (`known`), sorted by name. Names with another stage's prefix (`others`) are that stage's to judge."""
    known_set = set(known) | set(allowed)
    known_sorted = sorted(known_set)
    prefix_tuple = tuple(prefixes)
    other_prefixes = tuple(prefix for prefix in others if not prefix.startswith(prefix_tuple)) if prefix_tuple else ()
    suffixes = declared_suffixes(known_set, prefix_tuple)
    found = []
    for name in sorted(set(names)):
        if name.startswith("_") or name in known_set:
            continue
        if name in RETIRED and (not prefix_tuple or name.startswith(prefix_tuple)):
            found.append(UnknownVariable(name, None, RETIRED[name]))
            continue
        if other_prefixes and name.startswith(other_prefixes) and not name.startswith(prefix_tuple):
            continue
        if prefix_tuple and name.startswith(prefix_tuple):
            close = difflib.get_close_matches(name, known_sorted, n=1, cutoff=SUGGESTION_RATIO)
            found.append(UnknownVariable(name, close[0] if close else None))
            continue
        close = difflib.get_close_matches(name, known_sorted, n=1, cutoff=NEAR_MISS_RATIO)
        shortened = shortened_match(name, suffixes)
        if close or shortened:
            found.append(UnknownVariable(name, close[0] if close else shortened))
    return found


def refusal(found: list[UnknownVariable], allow_var: str, stage: str = "") -> str:
    """One message for every unknown name, with the fix."""
    lines = "; ".join(item.describe() for item in found)
    whose = f"the {stage} stage does not declare" if stage else "no stage declares"
    return (
        f"variables {whose} (Ansible would ignore them and leave the host as it is): {lines}. "
        f"Fix the spelling (docs/variables.md), or list a variable of your own in {allow_var}"
    )


def role_refusal(
    names: Iterable[str], role: str, spec_document: dict, sibling_roles: Iterable[str] = (), *,
    allowed: Iterable[str] = (), allow_var: str = "specgate_allowed_variables",
) -> str:
    """'' or the refusal of the names meant for `role` (its prefix, or one slip from its names) it does not declare.

    `sibling_roles` are the other stages' names: a name carrying one of their prefixes is theirs to judge, not a
    near miss of this role's (`spec_sweep_runs` is no slip of `spec_gate_runs`)."""
    others = [f"{name}_" for name in sibling_roles if name != role]
    found = unknown_variables(names, declared_names([spec_document]), [f"{role}_"], allowed, others)
    return refusal(found, allow_var, role) if found else ""
