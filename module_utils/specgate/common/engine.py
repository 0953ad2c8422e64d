"""The engine-version catalog: one entry per SGLang release specgate renders for, and the one rule for which SGLang
versions are supported. Read by every stage that judges the engine: sglang_env's plan (the pin, before anything
changes), the weights stage's limits, and the service's renderer (module_utils/specgate/service/sglang_flags.py).

A version string is `X.Y.Z`, optionally with the local label `+ddtree` (`0.5.23+ddtree`) when the install carries the
DDTree pull request (sgl-project/sglang#29907). Users never write that label: sglang_env derives it
(`render_version`) from the features its patches or git source declare (`provides`). Adding an SGLang release is one
VERSION_RULES row (read from its wheel: its flag spellings, its CUDA lane, the stack its metadata pins) plus the peer
tests that resolve every shipped profile with it and compare the row's stack with the wheel's Requires-Dist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any


# One row per SGLang release specgate renders for. Only releases whose spellings were read from the wheel
# and are resolved by the peer tests belong here.
#   window: the draft-window key its --config loader accepts (0.5.15/0.5.19 refuse the new name in YAML)
#   max_bs: the CUDA-graph max batch size key (0.5.23 made the old one ambiguous)
#   attn_dp: "attn-dp-size" (0.5.23) or "enable-dp-attention" (older: --dp-size N --enable-dp-attention)
#   graph_off: keys that switch every CUDA graph off, decode and prefill. 0.5.15/0.5.19's loader refuses
#              cuda-graph-backend-prefill and --disable-cuda-graph but takes disable-prefill-cuda-graph
#              (srt/arg_groups/cuda_graph_hook.py::_parse_cuda_graph_config folds it into the prefill backend);
#              0.5.11's --disable-cuda-graph leaves the piecewise prefill graphs on
#              (srt/model_executor/model_runner.py::init_piecewise_cuda_graphs reads only
#              disable_piecewise_cuda_graph). tests/peer checks the resolved backends of both phases.
#   dflash_attn_dp: whether DFLASH runs with attention-DP at all (before 0.5.23: "Currently DFLASH speculative
#                   decoding does not support dp attention.")
#   dflash_draft_backends: the draft attention backends DFLASH runs with; SGLang replaces any other with flashinfer
#                   and only warns (0.5.11: srt/speculative/dflash_worker.py; 0.5.15, 0.5.19:
#                   srt/arg_groups/speculative_hook.py::_resolve_dflash_draft_attention_backend; 0.5.23: the same
#                   function over srt/arg_groups/choices.py::DRAFT_ATTENTION_BACKEND_CHOICES); trtllm_mha stays
#                   only for a drafter whose layers are all sliding-window or that is causal (0.5.19+)
#   gated_launch: whether --gated-launch-port exists (srt/distributed/gated_launch.py, new in 0.5.19; 0.5.23 has it
#                 as srt/arg_groups/fields/parallel.py::gated_launch_port): multi-node starts use it to see every
#                 node join before the weights load (module_utils/specgate/service/node_topology.py)
#   cuda_majors: the CUDA majors its pinned torch/FlashInfer/sglang-kernel stack has builds for (sglang-reference.md:
#                0.5.19 is the last release with a CUDA 12 lane); cuda_toolkit_version must be one of them
#   stack: the companions its wheel pins exactly (sglang-X.dist-info/METADATA Requires-Dist, checked by tests/peer):
#          pip installs sglang only with these, so a different pin of one in sglang_env_packages is refused in the
#          plan instead of by pip's resolver on the host
@dataclass(frozen=True)
class VersionRules:
    window: str
    max_bs: str
    attn_dp: str
    graph_off: tuple[tuple[str, Any], ...]
    dflash_attn_dp: bool
    dflash_draft_backends: tuple[str, ...]
    gated_launch: bool
    cuda_majors: tuple[int, ...]
    stack: tuple[tuple[str, str], ...]


VERSION_RULES: dict[str, VersionRules] = {
    "0.5.11": VersionRules(
        window="speculative-dflash-draft-window-size",
        max_bs="cuda-graph-max-bs",
        attn_dp="enable-dp-attention",
        graph_off=(("disable-cuda-graph", True), ("disable-piecewise-cuda-graph", True)),
        dflash_attn_dp=False,
        dflash_draft_backends=("flashinfer", "fa3", "fa4", "triton"),
        gated_launch=False,
        cuda_majors=(12, 13),
        stack=(("flashinfer-python", "0.6.8.post1"), ("sglang-kernel", "0.4.2"), ("torch", "2.11.0")),
    ),
    "0.5.19": VersionRules(
        window="speculative-dflash-draft-window-size",
        max_bs="cuda-graph-max-bs",
        attn_dp="enable-dp-attention",
        graph_off=(("cuda-graph-backend-decode", "disabled"), ("disable-prefill-cuda-graph", True)),
        dflash_attn_dp=False,
        dflash_draft_backends=("flashinfer", "fa3", "fa4", "triton", "trtllm_mha", "ascend"),
        gated_launch=True,
        cuda_majors=(12, 13),
        stack=(("flashinfer-python", "0.6.18"), ("sglang-kernel", "0.4.6.post1"), ("torch", "2.13.0")),
    ),
    "0.5.23": VersionRules(
        window="speculative-draft-window-size",
        max_bs="cuda-graph-max-bs-decode",
        attn_dp="attn-dp-size",
        graph_off=(("cuda-graph-backend-decode", "disabled"), ("cuda-graph-backend-prefill", "disabled")),
        dflash_attn_dp=True,
        dflash_draft_backends=("flashinfer", "fa3", "fa4", "triton", "ascend", "trtllm_mha", "intel_xpu"),
        gated_launch=True,
        cuda_majors=(13,),
        stack=(("flashinfer-python", "0.7.2"), ("sglang-kernel", "0.4.10"), ("torch", "2.14.1")),
    ),
}
# 0.5.15 spells everything specgate renders as 0.5.19 does (its own parser and resolver accept every 0.5.19
# rendering: tests/peer); only its DFLASH draft backends are fewer (no trtllm_mha), it has no gated launch (its wheel
# has no srt/distributed/gated_launch.py), and its stack is older.
VERSION_RULES["0.5.15"] = replace(
    VERSION_RULES["0.5.19"],
    dflash_draft_backends=("flashinfer", "fa3", "fa4", "triton", "ascend"),
    gated_launch=False,
    stack=(("flashinfer-python", "0.6.12"), ("sglang-kernel", "0.4.4"), ("torch", "2.11.0")),
)


def release_key(release: str) -> tuple[int, ...]:
    """`0.5.23` → (0, 5, 23), for ordering releases."""
    return tuple(int(part) for part in release.split("."))


VERSION_RULES = dict(sorted(VERSION_RULES.items(), key=lambda item: release_key(item[0])))
SUPPORTED_VERSIONS = tuple(VERSION_RULES)


def cuda_majors_of(release: str) -> tuple[int, ...]:
    """The CUDA majors a release's stack is built for: its catalog row's; a release without one (judged before it is
    refused, or named in a message) takes the lane of the newest catalogued release at or before it, and a release
    after the last one with a CUDA 12 lane only CUDA 13 (SGLang did not go back)."""
    if release in VERSION_RULES:
        return VERSION_RULES[release].cuda_majors
    last_cuda12 = max((r for r, rules in VERSION_RULES.items() if 12 in rules.cuda_majors), key=release_key)
    if release_key(release) > release_key(last_cuda12):
        return (13,)
    earlier = [r for r in VERSION_RULES if release_key(r) <= release_key(release)] or [SUPPORTED_VERSIONS[0]]
    return VERSION_RULES[max(earlier, key=release_key)].cuda_majors


def releases_for_cuda(major: int) -> tuple[str, ...]:
    """The catalogued releases whose stack has builds for CUDA ``major``."""
    return tuple(r for r, rules in VERSION_RULES.items() if major in rules.cuda_majors)

_VERSION = re.compile(r"^(\d+\.\d+\.\d+)(\+ddtree)?$")
# PEP 440 suffixes after X.Y.Z: .postN, .devN, aN/bN/rcN (with optional separators), and a local label.
_VERSION_PARTS = re.compile(
    r"^(?P<release>\d+\.\d+\.\d+)(?P<pre>[-_.]?(a|b|rc|alpha|beta|c)[-_.]?\d*)?(?P<post>[-_.]?post[-_.]?\d*)?"
    r"(?P<dev>[-_.]?dev[-_.]?\d*)?(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?$",
    re.IGNORECASE,
)
# SGLang 0.5.23 srt/utils/common.py::human_readable_int: SI suffixes (decimals allowed) and IEC suffixes.
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


# What a patch or a git source can add to a release (sglang_env_patches[].provides, sglang_env_git_provides).
ENGINE_FEATURES: dict[str, str] = {"ddtree": "sgl-project/sglang#29907, --speculative-algorithm DDTREE"}
# The SGLang version a plan names, when a refusal does not know which variable set it.
VERSION_VARIABLE = "sglang_env_packages"


class SglangConfigError(ValueError):
    """A deployment that specgate refuses to render; the message names the variable and the fix."""


@dataclass(frozen=True)
class SglangTarget:
    """The SGLang install a config is rendered for."""

    release: str
    ddtree: bool

    @property
    def rules(self) -> VersionRules:
        return VERSION_RULES[self.release]


def render_version(release: str, features: Any) -> str:
    """The version string a release with these engine features renders for: `0.5.23` + [ddtree] → `0.5.23+ddtree`."""
    return f"{release}+ddtree" if "ddtree" in (features or ()) else release


def _refuse_unsupported_shape(text: str, variable: str) -> None:
    """A well-formed version that is not X.Y.Z[+ddtree]: say why it is refused, in SGLang's terms."""
    parts = _VERSION_PARTS.match(text)
    if parts is None:
        return
    release, supported = parts.group("release"), ", ".join(SUPPORTED_VERSIONS)
    if parts.group("post"):
        # Decision (issue 13): a post-release is not mapped to its release's rules. SGLang cuts post-releases
        # from its main branch like any other release, so their flag spellings are their own; specgate renders
        # only for versions whose spellings were read from the wheel and resolved by its own resolver (tests/peer).
        raise SglangConfigError(
            f"{variable}: SGLang {text} is a post-release of {release}; SGLang cuts post-releases from "
            f"its main branch like any other release, so specgate does not assume {release}'s flag spellings for "
            f"it (supported: {supported}). Pin sglang=={release} (sglang_env_packages), or add {text} to "
            "VERSION_RULES in module_utils/specgate/common/engine.py once tests/peer resolves every shipped "
            "profile with its own parser"
        )
    if parts.group("pre") or parts.group("dev"):
        raise SglangConfigError(
            f"{variable}: SGLang {text} is a pre-release or development build; specgate renders "
            f"configs only for releases it has resolved with their own parser (supported: {supported}). "
            "Pin one of those (a patch such as the DDTree pull request goes on top: sglang_env_patches)"
        )
    if parts.group("local") and parts.group("local").lower() != "ddtree":
        raise SglangConfigError(
            f"{variable}: {text!r} carries the local label +{parts.group('local')}; specgate renders for "
            "releases (X.Y.Z). Name the release, and declare what a patch adds on its sglang_env_patches entry "
            "(provides: [ddtree])"
        )


def parse_sglang_version(text: Any, variable: str = VERSION_VARIABLE) -> SglangTarget:
    """`0.5.23` → stock release; `0.5.23+ddtree` → that release with the DDTree PR applied.

    The one rule for supported SGLang versions (the renderer, preflight and the role all call it): a release
    with a VERSION_RULES row, optionally +ddtree. Post-releases, pre-releases, dev builds and other local
    labels are refused with the reason.
    """
    text = text.strip() if isinstance(text, str) else text
    match = _VERSION.match(text) if isinstance(text, str) else None
    if match is None:
        if isinstance(text, str):
            _refuse_unsupported_shape(text, variable)
        raise SglangConfigError(
            f"{variable}: {text!r} is not an SGLang version; write X.Y.Z (what a patch adds, such as the "
            "DDTree pull request, is declared on its sglang_env_patches entry: provides: [ddtree])"
        )
    release = match.group(1)
    if release not in VERSION_RULES:
        raise SglangConfigError(
            f"{variable}: SGLang {release} is not a version specgate renders configs for "
            f"(supported: {', '.join(SUPPORTED_VERSIONS)}); pin one of them"
        )
    return SglangTarget(release=release, ddtree=match.group(2) is not None)


def human_readable_int(text: str) -> int:
    """SGLang's reading of an integer flag such as --context-length: `128k` → 128000, `128Ki` → 131072.

    The rule of SGLang 0.5.23 `srt/utils/common.py::human_readable_int` (SI suffixes k/M/G/T, decimals allowed;
    IEC Ki/Mi/Gi/Ti, whole numbers only; case-sensitive), applied here so every version gets the integer.
    """
    value = text.strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _IEC:
            if "." in number:
                raise ValueError(f"decimals are not allowed with IEC suffixes like {suffix!r}")
            return int(number) * _IEC[suffix]
        return int(Decimal(number) * _SI[suffix])
    try:
        return int(value)
    except ValueError:
        raise ValueError("use a plain integer, SI suffixes (128k) or IEC suffixes (128Ki); suffixes are "
                         "case-sensitive") from None
