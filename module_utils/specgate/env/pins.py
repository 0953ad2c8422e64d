"""sglang_env's package lines read as pip reads them (PEP 508, through packaging.requirements): `sglang == 0.5.23`,
`sglang[all]==0.5.23; python_version >= "3.10"` and `SGLang==0.5.23` all pin SGLang 0.5.23. Hand-written patterns
missed the spaces and markers pip accepts, and then said nothing pinned SGLang.

Controller only: library/sglang_env_plan runs there (delegate_to: localhost), where ansible-core brings
`packaging`; a host's system Python need not have it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def parse_requirement(line: str, variable: str) -> Requirement:
    """The requirement ``line`` states, or ValueError naming ``variable`` and pip's own complaint."""
    try:
        return Requirement(str(line))
    except InvalidRequirement as error:
        raise ValueError(
            f"{variable}: {line!r} is not a requirement pip can read ({error}). Fix: write it as name==version, "
            "e.g. sglang==0.5.23."
        ) from error


def exact_version(requirement: Requirement) -> str | None:
    """The one version ``requirement`` allows (`==X` or `===X`, no wildcard, no URL), else None."""
    specifiers = list(requirement.specifier)
    if requirement.url or len(specifiers) != 1:
        return None
    (only,) = specifiers
    if only.operator not in ("==", "===") or only.version.endswith(".*"):
        return None
    return only.version


def is_pinned(line: str, variable: str = "sglang_env_packages") -> bool:
    """Whether ``line`` pins one exact version; ValueError naming ``variable`` (the list it came from) if unreadable."""
    return exact_version(parse_requirement(line, variable)) is not None


def name_of(line: str, variable: str = "sglang_env_packages") -> str:
    """The distribution's name as written (`flashinfer-python[cu13]==0.7.2` -> `flashinfer-python`)."""
    return parse_requirement(line, variable).name


def sglang_pin(packages: list[str]) -> str:
    """The version the `sglang==` pin among ``packages`` names ("" when none does, e.g. a git source). A marker is
    kept by pip for the host to judge; the version is the pin's all the same."""
    for line in packages or ():
        requirement = parse_requirement(line, "sglang_env_packages")
        if canonicalize_name(requirement.name) == "sglang":
            return exact_version(requirement) or ""
    return ""


def stack_refusals(packages: list[str], release: str, stacks: Mapping[str, tuple[tuple[str, str], ...]]) -> list[str]:
    """A pin in ``packages`` of a companion the SGLang ``release`` pins exactly (``stacks[release]``: its wheel's
    Requires-Dist) at another version: pip would refuse the set on the host, after downloading it. ``stacks`` holds
    every catalogued release's, to name the SGLang that goes with the pin the user wrote."""
    def key(name: str, version: str) -> tuple[str, Version]:
        return canonicalize_name(name), Version(version)

    wanted = dict(key(name, version) for name, version in stacks[release])
    pinned_by = {key(name, version): other for other, stack in stacks.items() for name, version in stack}
    problems = []
    for line in packages or ():
        requirement = parse_requirement(line, "sglang_env_packages")
        version = exact_version(requirement)
        name = canonicalize_name(requirement.name)
        if name not in wanted or version is None or Version(version) == wanted[name]:
            continue
        other = pinned_by.get((name, Version(version)))
        hint = f", or pin sglang=={other}, the release that pins {requirement.name}=={version}" if other else ""
        problems.append(
            f"sglang_env_packages: pins {requirement.name}=={version}, but SGLang {release} requires "
            f"{requirement.name}=={wanted[name]} (its wheel's Requires-Dist); pip would refuse the set on the host "
            f"after downloading it. Fix: pin {requirement.name}=={wanted[name]}{hint}."
        )
    return problems


def install_refusal(installed: str, engine: Mapping[str, Any]) -> str:
    """'' when the venv's SGLang (``installed``, as its metadata says) is the engine the plan published, else the
    sentence that names the variable to fix. A pin must be installed exactly (0.5.23.post1 is not 0.5.23: its flags
    are its own); a git commit's version may carry a dev or local label, so only its release is compared."""
    if not installed:
        return ""
    variable, stated, pin = engine.get("version_variable", ""), str(engine.get("sglang_version", "")), engine.get("pin")
    try:
        version = Version(installed)
        if pin:
            agrees = version == Version(pin)
        else:
            agrees = ".".join(map(str, version.release[:3])) == stated.split("+", maxsplit=1)[0]
    except InvalidVersion:
        agrees = False
    if agrees:
        return ""
    return (
        f"{variable}: the venv's SGLang is {installed}, but {variable} says {pin or stated}; configs would be rendered "
        f"for the wrong release. Fix: set {variable} to the release the venv installs."
    )
