"""cuda_toolkit's plan (CUDA_HOME, arch spelling, refusals) and the probe's cubin check."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.specgate.cuda.cuda_toolkit import cubin_sm, nvcc_release, plan

pytestmark = pytest.mark.host

PYPI = ["nvidia-cuda-nvcc==13.0.88", "nvidia-cuda-runtime==13.0.96", "nvidia-curand==10.4.0.35"]
APT = ["cuda-nvcc-13-0", "cuda-cudart-dev-13-0", "libcurand-dev-13-0"]
# First 64 bytes of cubins nvcc 13.0.88 wrote for the curand probe (`nvcc -arch=sm_XXa -cubin`).
CUBIN_SM90A = bytes.fromhex(
    "7f454c460201014108000000000000000200be0001000000000000000000000020690300000000006064030000000000"
    "045a0006400038000600400013000100"
)
CUBIN_SM120A = bytes.fromhex(
    "7f454c460201014108000000000000000200be00010000000000000000000000f872030000000000786b030000000000"
    "0278000640003800060040001e000100"
)


def pypi_plan(arch="sm120", version="13.0", packages=PYPI):
    return plan(arch, version, source="pypi", prefix="/opt/specgate/cuda", pypi_packages=packages, apt_packages=[])


def test_pypi_sm120_plan_names_home_arch_flag_and_arch_list():
    result = pypi_plan()
    assert result.problems == []
    assert (result.home, result.lib_dir, result.pypi_subdir) == (
        "/opt/specgate/cuda/home",
        "/opt/specgate/cuda/home/lib",
        "nvidia/cu13",
    )
    assert (result.nvcc_arch, result.arch_list, result.sm) == ("sm_120a", "12.0a", 120)


@pytest.mark.parametrize(
    ("arch", "nvcc_arch", "arch_list"),
    [("sm90", "sm_90a", "9.0a"), ("sm100", "sm_100a", "10.0a"), ("sm103", "sm_103a", "10.3a")],
)
def test_each_arch_gets_its_arch_specific_target(arch, nvcc_arch, arch_list):
    result = pypi_plan(arch)
    assert (result.nvcc_arch, result.arch_list) == (nvcc_arch, arch_list)


def test_apt_plan_uses_the_versioned_usr_local_tree():
    result = plan("sm103", "13.0", source="apt", prefix="/opt/specgate/cuda", pypi_packages=[], apt_packages=APT)
    assert result.problems == []
    assert (result.home, result.lib_dir) == ("/usr/local/cuda-13.0", "/usr/local/cuda-13.0/lib64")


def test_gpu_less_host_without_cuda_arch_is_refused():
    (problem,) = pypi_plan(arch=None).problems
    assert problem.startswith("cuda_toolkit_arch:")
    assert "set cuda_toolkit_arch" in problem


def test_unknown_arch_is_refused():
    assert pypi_plan(arch="sm89").problems[0].startswith("cuda_toolkit_arch:")


def test_toolkit_below_arch_minimum_is_refused():
    result = plan("sm103", "12.8", source="apt", prefix="/p", pypi_packages=[], apt_packages=["libcurand-dev-12-8"])
    assert [p.split(":")[0] for p in result.problems] == ["cuda_toolkit_version"]
    assert "12.9 or newer" in result.problems[0]


def test_pypi_source_for_cuda_12_is_refused():
    problems = pypi_plan(arch="sm90", version="12.8").problems
    assert [p.split(":")[0] for p in problems] == ["cuda_toolkit_source"]


def test_pypi_package_list_without_curand_is_refused():
    problems = pypi_plan(packages=["nvidia-cuda-nvcc==13.0.88"]).problems
    assert [p.split(":")[0] for p in problems] == ["cuda_toolkit_pypi_packages"]


def test_apt_package_list_without_curand_is_refused():
    result = plan("sm120", "13.0", source="apt", prefix="/p", pypi_packages=[], apt_packages=["cuda-nvcc-13-0"])
    assert [p.split(":")[0] for p in result.problems] == ["cuda_toolkit_apt_packages"]
    assert "libcurand-dev-13-0" in result.problems[0]


def test_malformed_version_is_refused():
    assert pypi_plan(version="13").problems[-1].startswith("cuda_toolkit_version:")


def test_cubin_header_gives_the_sm_it_was_built_for():
    assert cubin_sm(CUBIN_SM90A) == 90
    assert cubin_sm(CUBIN_SM120A) == 120


def test_non_cuda_elf_and_garbage_have_no_sm():
    x86_elf = CUBIN_SM120A[:18] + (62).to_bytes(2, "little") + CUBIN_SM120A[20:]
    assert cubin_sm(x86_elf) is None
    assert cubin_sm(b"not an elf at all" * 4) is None
    assert cubin_sm(b"") is None


def test_nvcc_release_is_read_from_version_banner():
    banner = "Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n"
    assert nvcc_release(banner) == "13.0"
    assert nvcc_release("command not found") is None


def test_nvcc_release_of_the_real_h200_toolkit():
    banner = (Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h200" / "nvcc_version.txt").read_text()
    assert nvcc_release(banner) == "13.0"
