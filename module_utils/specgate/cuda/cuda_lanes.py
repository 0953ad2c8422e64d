"""Which CUDA toolkit an SM arch and an SGLang release need, and how each arch is spelled for the compilers.

One table for preflight (refuse a bad combination) and cuda_toolkit (pick nvcc flags and arch lists).
Sources: DESIGN.md (minimum toolkit per arch). Which CUDA an SGLang release needs is its row of the engine-version
catalog (module_utils/specgate/common/engine.py: cuda_majors).
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible.module_utils.specgate.common.engine import cuda_majors_of

# Minimum CUDA toolkit per arch: Hopper since 12.0, Blackwell datacenter (SM100) and workstation (SM120)
# since 12.8, Blackwell Ultra (SM103) since 12.9.
CUDA_MINIMUM_BY_ARCH: dict[str, str] = {
    "sm90": "12.0",
    "sm100": "12.8",
    "sm103": "12.9",
    "sm120": "12.8",
}

# `a` = arch-specific features (wgmma, tcgen05, …) that FlashInfer's and sgl-kernel's kernels use.
NVCC_ARCH_BY_ARCH: dict[str, str] = {
    "sm90": "sm_90a",
    "sm100": "sm_100a",
    "sm103": "sm_103a",
    "sm120": "sm_120a",
}
# FLASHINFER_CUDA_ARCH_LIST / TORCH_CUDA_ARCH_LIST spelling of the same targets.
ARCH_LIST_BY_ARCH: dict[str, str] = {
    "sm90": "9.0a",
    "sm100": "10.0a",
    "sm103": "10.3a",
    "sm120": "12.0a",
}
# SM number as a cubin's ELF header records it (e_flags bits 8-15 in ELF ABI version 8).
SM_NUMBER_BY_ARCH: dict[str, int] = {"sm90": 90, "sm100": 100, "sm103": 103, "sm120": 120}


@dataclass(frozen=True)
class CudaLane:
    allowed_majors: tuple[int, ...]
    reason: str


def parse_version(text: str, parts: int) -> tuple[int, ...]:
    """ "12.8" → (12, 8); "0.5.23" → (0, 5, 23). Raises ValueError with the text when it is not that shape."""
    pieces = str(text).strip().split(".")
    if len(pieces) < parts or not all(piece.isdigit() for piece in pieces[:parts]):
        raise ValueError(f"{text!r} is not a version with {parts} numeric parts")
    return tuple(int(piece) for piece in pieces[:parts])


def cuda_lane_for_sglang(sglang_version: str) -> CudaLane:
    """CUDA majors an SGLang release's pinned torch/FlashInfer/sglang-kernel stack is built for (the catalog's)."""
    release = ".".join(map(str, parse_version(sglang_version, 3)))
    majors = cuda_majors_of(release)
    if len(majors) > 1:
        return CudaLane(majors, f"SGLang {sglang_version} has {' and '.join(f'CUDA {m}' for m in majors)} builds")
    return CudaLane(majors, f"SGLang {sglang_version} pins torch/FlashInfer/sglang-kernel built for CUDA {majors[0]}")


def cuda_meets_minimum(arch: str, cuda_version: str) -> bool:
    """True when the toolkit version can compile for the arch."""
    return parse_version(cuda_version, 2) >= parse_version(CUDA_MINIMUM_BY_ARCH[arch], 2)
