"""Plan a CUDA toolkit install for an arch, and prove it with a compiled probe.

The probe is what FlashInfer's JIT needs and what broke by hand on Blackwell: nvcc that knows the arch
(sm_120a needs CUDA >= 12.8) and curand headers (`<curand_kernel.h>`) on the include path.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.specgate.cuda.cuda_lanes import (
    ARCH_LIST_BY_ARCH,
    CUDA_MINIMUM_BY_ARCH,
    NVCC_ARCH_BY_ARCH,
    SM_NUMBER_BY_ARCH,
    cuda_meets_minimum,
    parse_version,
)

EM_CUDA = 190
_NVCC_RELEASE_RE = re.compile(r"release (\d+\.\d+)")
# PyPI CUDA wheels lay one tree out per major from CUDA 13 on (nvidia/cu13/{bin,include,lib}); the CUDA 12
# wheels scatter nvcc, headers and libraries over one directory per package, which no CUDA_HOME can name.
FIRST_PYPI_TREE_MAJOR = 13


@dataclass
class CudaPlan:
    arch: str | None
    version: str
    source: str
    nvcc_arch: str | None = None
    arch_list: str | None = None
    sm: int | None = None
    home: str | None = None
    lib_dir: str | None = None
    pypi_subdir: str | None = None
    problems: list[str] = field(default_factory=list)


def plan(
    arch: str | None,
    version: str,
    *,
    source: str,
    prefix: str,
    pypi_packages: list[str],
    apt_packages: list[str],
    driver_cuda_version: str = "",
    driver_version: str = "",
) -> CudaPlan:
    """Where the toolkit goes and how the arch is spelled; problems name the cuda_* variable and the fix.

    `driver_cuda_version` is the CUDA version the host's driver supports (nvidia-smi): a toolkit of a newer
    major builds binaries that will not load on it."""
    result = CudaPlan(arch=arch or None, version=version, source=source)
    if not arch:
        result.problems.append(
            "cuda_toolkit_arch: the host reports no GPU arch (specgate_gpu.arch is null). Fix: set cuda_toolkit_arch "
            "(sm90, sm100, sm103 or sm120) for the arch this host compiles for, e.g. on a GPU-less test host."
        )
    elif arch not in NVCC_ARCH_BY_ARCH:
        result.problems.append(
            f"cuda_toolkit_arch: {arch!r} is not a specgate arch. Fix: use one of {sorted(NVCC_ARCH_BY_ARCH)}."
        )
    try:
        major = parse_version(version, 2)[0]
    except ValueError:
        result.problems.append(f"cuda_toolkit_version: {version!r} is not MAJOR.MINOR. Fix: set it like '13.0'.")
        return result
    result.problems += _driver_problems(major, version, driver_cuda_version, driver_version)
    if result.arch in CUDA_MINIMUM_BY_ARCH:
        if not cuda_meets_minimum(result.arch, version):
            result.problems.append(
                f"cuda_toolkit_version: CUDA {version} cannot compile for {result.arch.upper()}. "
                f"Fix: set cuda_toolkit_version to {CUDA_MINIMUM_BY_ARCH[result.arch]} or newer."
            )
        result.nvcc_arch = NVCC_ARCH_BY_ARCH[result.arch]
        result.arch_list = ARCH_LIST_BY_ARCH[result.arch]
        result.sm = SM_NUMBER_BY_ARCH[result.arch]
    if source == "pypi":
        if major < FIRST_PYPI_TREE_MAJOR:
            result.problems.append(
                f"cuda_toolkit_source: the PyPI CUDA {version} wheels have no single toolkit tree (CUDA_HOME). "
                "Fix: set cuda_toolkit_source: apt for a CUDA 12 toolkit, or cuda_toolkit_version to 13.0 or newer."
            )
        if not any(package.split("=")[0].strip() == "nvidia-curand" for package in pypi_packages):
            result.problems.append(
                "cuda_toolkit_pypi_packages: nvidia-curand is missing; FlashInfer's JIT includes <curand_kernel.h>. "
                "Fix: add a pinned nvidia-curand (e.g. nvidia-curand==10.4.0.35 for CUDA 13.0)."
            )
        result.pypi_subdir = f"nvidia/cu{major}"
        result.home = f"{prefix}/home"
        result.lib_dir = f"{result.home}/lib"
    else:
        if not any(package.startswith("libcurand-dev") for package in apt_packages):
            result.problems.append(
                "cuda_toolkit_apt_packages: no libcurand-dev package; FlashInfer's JIT includes <curand_kernel.h>. "
                f"Fix: add libcurand-dev-{version.replace('.', '-')}."
            )
        result.home = f"/usr/local/cuda-{version}"
        result.lib_dir = f"{result.home}/lib64"
    return result


def _driver_problems(major: int, version: str, driver_cuda_version: str, driver_version: str) -> list[str]:
    if not driver_cuda_version:
        return []
    try:
        driver_major = parse_version(driver_cuda_version, 2)[0]
    except ValueError:
        return []
    if driver_major >= major:
        return []
    return [
        f"cuda_toolkit_version: the driver ({driver_version or 'installed'}) supports CUDA {driver_cuda_version}; a "
        f"CUDA {version} toolkit's binaries will not load on it. Fix: upgrade the NVIDIA driver to one that "
        f"supports CUDA {major} (580 or newer for CUDA 13), or lower cuda_toolkit_version to the driver's major."
    ]


def nvcc_release(version_output: str) -> str | None:
    """ "release 13.0" out of `nvcc --version`."""
    match = _NVCC_RELEASE_RE.search(version_output)
    return match.group(1) if match else None


def cubin_sm(header: bytes) -> int | None:
    """SM number a cubin was compiled for, from its ELF header; None when it is not a CUDA ELF."""
    if len(header) < 52 or header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only
        return None
    (machine,) = struct.unpack_from("<H", header, 18)
    if machine != EM_CUDA:
        return None
    (flags,) = struct.unpack_from("<I", header, 48)
    # ELF ABI version 8 (CUDA 12.8+) moved the SM number from bits 0-7 to bits 8-15 of e_flags.
    return (flags >> 8) & 0xFF if header[8] >= 8 else flags & 0xFF


def as_dict(cuda_plan: CudaPlan) -> dict[str, Any]:
    return {
        "arch": cuda_plan.arch,
        "version": cuda_plan.version,
        "source": cuda_plan.source,
        "nvcc_arch": cuda_plan.nvcc_arch,
        "arch_list": cuda_plan.arch_list,
        "sm": cuda_plan.sm,
        "home": cuda_plan.home,
        "lib_dir": cuda_plan.lib_dir,
        "pypi_subdir": cuda_plan.pypi_subdir,
    }
