"""Each row of the engine-version catalog against its release's own wheel: the stack the row says SGLang pins is what
the wheel's metadata requires (Requires-Dist, read as pip reads it), and the row's CUDA lane is the one its FlashInfer
says. Needs the resolver venv (scripts/setup_sglang_resolver_venv), which holds each release's dist-info."""

from __future__ import annotations

from importlib.metadata import PathDistribution

import pytest
from ansible.module_utils.specgate.common.engine import SUPPORTED_VERSIONS, VERSION_RULES
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from resolver_cases import require_resolver_venv


def wheel_pins(version: str) -> dict[str, Requirement]:
    """The wheel's unconditional requirements (no extra), by canonical name."""
    venv = require_resolver_venv()
    dist_info = venv / "versions" / version / f"sglang-{version}.dist-info"
    assert dist_info.is_dir(), f"{dist_info} is missing: run scripts/setup_sglang_resolver_venv {version}"
    pins = {}
    for line in PathDistribution(dist_info).requires or []:
        requirement = Requirement(line)
        if requirement.marker is None or "extra" not in str(requirement.marker):
            pins[canonicalize_name(requirement.name)] = requirement
    return pins


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_catalogs_stack_is_what_the_wheel_pins(version: str) -> None:
    pins = wheel_pins(version)
    stated = {canonicalize_name(name): pinned for name, pinned in VERSION_RULES[version].stack}
    read = {}
    for name in stated:
        assert name in pins, f"SGLang {version}'s wheel does not require {name}"
        (only,) = pins[name].specifier
        assert only.operator == "==", f"SGLang {version} requires {pins[name]}, not one exact version"
        read[name] = only.version
    assert read == stated


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_release_on_the_cuda_13_lane_only_requires_flashinfers_cuda_13_build(version: str) -> None:
    flashinfer = wheel_pins(version)["flashinfer-python"]
    if VERSION_RULES[version].cuda_majors == (13,):
        assert "cu13" in flashinfer.extras, flashinfer
