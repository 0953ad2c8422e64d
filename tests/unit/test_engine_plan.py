"""The engine fact (sglang_env_plan.plan_engine) and the toolkit's driver check (cuda_toolkit.plan): one answer
to what the venv's engine can do, the SGLang release judged by the renderer's own rule, the CUDA lane and the
driver judged by the stages that own them, each naming the variable the user sets."""

from __future__ import annotations

import re

import pytest
from ansible.module_utils.specgate.common.engine import SglangConfigError, parse_sglang_version
from ansible.module_utils.specgate.cuda.cuda_lanes import cuda_lane_for_sglang, cuda_meets_minimum
from ansible.module_utils.specgate.cuda.cuda_toolkit import plan as cuda_plan
from ansible.module_utils.specgate.env.sglang_env_plan import plan_env

STACK = ["sglang==0.5.23", "flashinfer-python==0.7.2", "sglang-kernel==0.4.10"]
DDTREE_PATCH = {"src": "/p/ddtree.patch", "strip": 2, "provides": ["ddtree"]}


def env(**changes):
    args = {"source": "index", "packages": STACK, "base_packages": [], "wheelhouse_dir": "", "index_url": "",
            "git_url": "", "git_ref": "", "git_subdirectory": "python", "patches": [], "patch_dir": "/opt/p",
            "cuda_version": "13.0"}
    return plan_env(**{**args, **changes})


def test_a_stock_pin_is_that_release_without_features():
    plan = env()
    assert plan.problems == []
    assert plan.engine == {"sglang_version": "0.5.23", "features": [], "source": "index",
                           "version_variable": "sglang_env_packages", "renders_for": "0.5.23", "pin": "0.5.23"}


def test_a_patch_that_provides_ddtree_makes_the_engine_render_ddtree():
    plan = env(patches=[DDTREE_PATCH])
    assert plan.engine["features"] == ["ddtree"]
    assert plan.engine["renders_for"] == "0.5.23+ddtree"
    assert plan.patches[0]["provides"] == ["ddtree"]


def test_a_patch_without_provides_adds_nothing():
    assert env(patches=[{"src": "/p/fix.patch"}]).engine["renders_for"] == "0.5.23"


def test_an_unknown_feature_is_refused_naming_the_known_ones():
    (problem,) = env(patches=[{"src": "/p/x.patch", "provides": ["tree"]}]).problems
    assert problem.startswith("sglang_env_patches: x.patch provides ['tree']")
    assert "ddtree" in problem


def test_a_git_source_names_its_release_and_what_its_commit_adds():
    plan = env(source="git", packages=STACK[1:], git_url="https://example.invalid/sglang.git", git_ref="a" * 40,
               sglang_version="0.5.23", git_provides=["ddtree"])
    assert plan.problems == []
    assert plan.engine["renders_for"] == "0.5.23+ddtree"
    assert plan.engine["version_variable"] == "sglang_env_sglang_version"


def test_a_git_source_without_its_release_is_refused_naming_the_variable():
    plan = env(source="git", packages=STACK[1:], git_url="https://example.invalid/sglang.git", git_ref="a" * 40)
    (problem,) = plan.problems
    assert problem.startswith("sglang_env_sglang_version:")


def test_git_provides_without_a_git_source_is_refused():
    assert any(p.startswith("sglang_env_git_provides:") for p in env(git_provides=["ddtree"]).problems)


@pytest.mark.parametrize(
    ("pin", "reason"),
    [
        ("0.5.24", r"^sglang_env_packages: SGLang 0\.5\.24 is not a version specgate renders configs for"),
        ("0.5.23.post1", r"post-release of 0\.5\.23.*Pin sglang==0\.5\.23"),
        ("0.5.24rc1", "pre-release or development build"),
    ],
)
def test_a_pin_the_renderer_refuses_is_refused_by_the_plan_with_the_renderers_reason(pin, reason):
    (problem,) = env(packages=[f"sglang=={pin}", *STACK[1:]]).problems
    assert re.search(reason, problem), problem


def test_the_plan_and_the_renderer_agree_on_every_version_shape():
    for version in ("0.5.11", "0.5.15", "0.5.19", "0.5.23", "0.5.22", "0.5.24", "0.5.23.post1", "0.5.23+cu130",
                    "0.5.24.dev0"):
        try:
            parse_sglang_version(version)
            renders = True
        except SglangConfigError:
            renders = False
        plan = env(packages=[f"sglang=={version}"], cuda_version="")
        assert (plan.problems == []) is renders, (version, plan.problems)


def test_sglang_0_5_23_on_a_cuda_12_toolkit_is_refused_naming_cuda_toolkit_version():
    (problem,) = env(cuda_version="12.9").problems
    assert problem.startswith("cuda_toolkit_version:")
    assert "CUDA 13" in problem


def test_sglang_0_5_19_accepts_cuda_12():
    assert env(packages=["sglang==0.5.19"], cuda_version="12.9").problems == []


def test_cuda_lane_table():
    assert cuda_lane_for_sglang("0.5.23").allowed_majors == (13,)
    assert cuda_lane_for_sglang("0.5.20").allowed_majors == (13,)  # after the last CUDA 12 release of the catalog
    assert cuda_lane_for_sglang("0.5.19").allowed_majors == (12, 13)
    assert cuda_lane_for_sglang("0.5.12").allowed_majors == (12, 13)  # the lane of 0.5.11, the release before it
    assert cuda_meets_minimum("sm103", "12.9")
    assert not cuda_meets_minimum("sm103", "12.8")
    assert cuda_meets_minimum("sm90", "12.0")


def _cuda(version="13.0", driver="13.0"):
    return cuda_plan("sm120", version, source="apt", prefix="/opt/specgate/cuda", pypi_packages=[],
                     apt_packages=["cuda-nvcc-13-0", "libcurand-dev-13-0"], driver_cuda_version=driver,
                     driver_version="580.95.05")


def test_a_driver_older_than_the_toolkit_major_is_refused_naming_cuda_toolkit_version():
    problems = _cuda(driver="12.8").problems
    assert any(p.startswith("cuda_toolkit_version: the driver (580.95.05) supports CUDA 12.8") for p in problems)
    assert any("upgrade the NVIDIA driver" in p for p in problems)


def test_a_driver_of_the_toolkit_major_or_newer_passes_and_no_driver_skips_the_check():
    assert _cuda(driver="13.0").problems == []
    assert _cuda(driver="").problems == []
