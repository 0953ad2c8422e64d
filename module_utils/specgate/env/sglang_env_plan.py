"""What sglang_env installs into the venv and from where, refusing requests that could not be reproduced.

Sources: a package index, a local wheelhouse (air-gapped hosts), or SGLang from a git commit (e.g. the
DDTree pull request) beside the pinned FlashInfer/kernel packages.

The plan also says what the engine will be able to do (`engine`): its SGLang release and the features that
patches or a git source add to it (DDTree: sgl-project/sglang#29907). That is the one answer every later check
reads (the specgate_engine fact): the renderer, the gate, the CUDA lane.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ansible.module_utils.specgate.common.engine import (
    ENGINE_FEATURES,
    VERSION_RULES,
    SglangConfigError,
    parse_sglang_version,
    releases_for_cuda,
    render_version,
)
from ansible.module_utils.specgate.cuda.cuda_lanes import cuda_lane_for_sglang, parse_version
from ansible.module_utils.specgate.env.pins import is_pinned, name_of, sglang_pin, stack_refusals
from packaging.utils import canonicalize_name

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class EnvPlan:
    requirements: list[str] = field(default_factory=list)
    git_requirement: str | None = None
    pip_args: str = ""
    version_names: list[str] = field(default_factory=list)
    patches: list[dict[str, Any]] = field(default_factory=list)
    engine: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def plan_env(
    *,
    source: str,
    packages: list[str],
    base_packages: list[str],
    wheelhouse_dir: str,
    index_url: str,
    git_url: str,
    git_ref: str,
    git_subdirectory: str,
    patches: list[dict[str, Any]],
    patch_dir: str,
    sglang_version: str = "",
    git_provides: list[str] | None = None,
    cuda_version: str = "",
) -> EnvPlan:
    result = EnvPlan()
    for requirement in [*packages, *base_packages]:
        try:
            name_of(requirement)
        except ValueError as error:
            result.problems.append(str(error))
    if result.problems:
        return result
    unpinned = [requirement for requirement in packages if not is_pinned(requirement)]
    if unpinned:
        result.problems.append(
            f"sglang_env_packages: {unpinned} are not pinned; a re-run or a second host could get other versions. "
            "Fix: pin each as name==version (e.g. sglang==0.5.23)."
        )
    result.requirements = [*base_packages, *packages]
    names = [name_of(requirement) for requirement in result.requirements]
    if source == "wheelhouse":
        if not wheelhouse_dir:
            result.problems.append(
                "sglang_env_wheelhouse: sglang_env_source is wheelhouse but no wheelhouse is given. "
                "Fix: set sglang_env_wheelhouse to the directory holding the wheels."
            )
        result.pip_args = f"--no-index --find-links {wheelhouse_dir}"
    elif index_url:
        result.pip_args = f"--index-url {index_url}"
    if source == "git":
        if not git_url:
            result.problems.append(
                "sglang_env_git_url: sglang_env_source is git but no repository is given. "
                "Fix: set sglang_env_git_url (e.g. the SGLang repository carrying the DDTree pull request)."
            )
        if not _COMMIT_RE.match(git_ref or ""):
            result.problems.append(
                f"sglang_env_git_ref: {git_ref!r} is not a full 40-character commit; a branch moves under a re-run. "
                "Fix: pin the commit (e.g. the pull request's head commit)."
            )
        if "sglang" in {canonicalize_name(name) for name in names}:
            result.problems.append(
                "sglang_env_packages: lists sglang while sglang_env_source is git, so two SGLangs would be asked for. "
                "Fix: drop sglang from sglang_env_packages when installing it from git."
            )
        subdirectory = f"#subdirectory={git_subdirectory}" if git_subdirectory else ""
        result.git_requirement = f"sglang @ git+{git_url}@{git_ref}{subdirectory}"
        names.append("sglang")
    result.version_names = list(dict.fromkeys(names))
    seen: set[str] = set()
    for patch in patches:
        src = str(patch.get("src") or "")
        if not src:
            result.problems.append(f"sglang_env_patches: {patch!r} has no src. Fix: set src to the patch file.")
            continue
        name = str(patch.get("name") or PurePosixPath(src).name)
        if name in seen:
            result.problems.append(f"sglang_env_patches: two patches are named {name!r}. Fix: give each a unique name.")
        seen.add(name)
        strip = patch.get("strip", 1)
        if not isinstance(strip, int) or strip < 0:
            result.problems.append(f"sglang_env_patches: {name} has strip {strip!r}. Fix: use a whole number >= 0.")
        provides = patch.get("provides") or []
        result.problems += _unknown_features("sglang_env_patches", name, provides)
        result.patches.append(
            {"name": name, "src": src, "strip": strip, "path": f"{patch_dir}/{name}", "provides": list(provides)}
        )
    if not result.problems:
        result.engine, problems = plan_engine(
            source=source, packages=packages, sglang_version=sglang_version, patches=result.patches,
            git_provides=list(git_provides or []), cuda_version=cuda_version,
        )
        result.problems += problems
    return result


def _unknown_features(variable: str, owner: str, provides: Any) -> list[str]:
    if not isinstance(provides, list) or not all(isinstance(item, str) for item in provides):
        return [f"{variable}: {owner} provides {provides!r}. Fix: list feature names, e.g. [ddtree]."]
    unknown = sorted(set(provides) - set(ENGINE_FEATURES))
    if unknown:
        known = ", ".join(f"{name} ({why})" for name, why in ENGINE_FEATURES.items())
        return [f"{variable}: {owner} provides {unknown}, which specgate does not know. Fix: use one of: {known}."]
    return []


def plan_engine(
    *, source: str, packages: list[str], sglang_version: str, patches: list[dict[str, Any]], git_provides: list[str],
    cuda_version: str,
) -> tuple[dict[str, Any], list[str]]:
    """What the venv's engine will be: its SGLang release, what patches and a git source add, the version string
    the renderer renders for, and the problems (an unsupported release, a CUDA toolkit of the wrong lane)."""
    problems = _unknown_features("sglang_env_git_provides", "the git source", git_provides)
    if git_provides and source != "git":
        problems.append(
            "sglang_env_git_provides: is set but sglang_env_source is not git. Fix: declare what a patch adds on its "
            "sglang_env_patches entry (provides: [ddtree]), or leave sglang_env_git_provides empty."
        )
    pin = sglang_pin(packages)
    version = sglang_version or pin
    variable = "sglang_env_sglang_version" if sglang_version else "sglang_env_packages"
    if sglang_version and pin:
        # Both said: the pin is what pip installs, so it must be a release specgate renders for, and the same one.
        try:
            pinned = parse_sglang_version(pin, variable="sglang_env_packages")
            stated = parse_sglang_version(sglang_version, variable=variable)
        except SglangConfigError as error:
            return {"sglang_version": version, "source": source, "version_variable": variable}, [str(error) + "."]
        if pinned.release != stated.release:
            problems.append(
                f"sglang_env_sglang_version: says {sglang_version} but sglang_env_packages pins sglang=={pin}, which "
                f"is what pip installs; configs would be rendered for the wrong release. Fix: set "
                f"sglang_env_sglang_version to {pinned.release} or leave it empty (the pin then names the release)."
            )
    if not version:
        problems.append(
            "sglang_env_sglang_version: nothing says which SGLang release the venv's engine is (no sglang==X.Y.Z in "
            "sglang_env_packages, e.g. a git source). Fix: set sglang_env_sglang_version to the release its commit "
            "builds (flag spellings differ per release)."
        )
    features = sorted({feature for patch in patches for feature in patch.get("provides") or []} | set(git_provides))
    engine = {"sglang_version": version, "features": features, "source": source, "version_variable": variable,
              "pin": pin}
    if problems:
        return engine, problems
    try:
        target = parse_sglang_version(version, variable=variable)
    except SglangConfigError as error:
        return engine, [str(error) + "."]
    engine["renders_for"] = render_version(target.release, features)
    if cuda_version:
        try:
            cuda_major = parse_version(cuda_version, 2)[0]
        except ValueError:
            problems.append(f"cuda_toolkit_version: {cuda_version!r} is not MAJOR.MINOR. Fix: set it like '13.0'.")
        else:
            lane = cuda_lane_for_sglang(target.release)
            if cuda_major not in lane.allowed_majors:
                other = releases_for_cuda(cuda_major)
                releases = (f", or pin a release with a CUDA {cuda_major} lane ({', '.join(other)}) in {variable}"
                            if other else "")
                problems.append(
                    f"cuda_toolkit_version: CUDA {cuda_version} does not match the SGLang lane: {lane.reason}. "
                    f"Fix: set cuda_toolkit_version to a CUDA {'/'.join(map(str, lane.allowed_majors))}.x toolkit "
                    f"(e.g. {max(lane.allowed_majors)}.0){releases}."
                )
    if pin and source != "git":
        # pip installs the pinned sglang only with the companions its wheel pins (a git source goes in --no-deps).
        stacks = {release: rules.stack for release, rules in VERSION_RULES.items()}
        problems.extend(stack_refusals(packages, target.release, stacks))
    return engine, problems
