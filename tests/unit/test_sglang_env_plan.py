"""sglang_env's plan: what the venv gets, from where, and the requests it refuses by variable name."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.env.sglang_env_plan import is_pinned, plan_env, requirement_name

pytestmark = pytest.mark.host

STACK = ["sglang==0.5.23", "flashinfer-python[cu13]==0.7.2", "sglang-kernel==0.4.10"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def env_plan(**overrides):
    args = {
        "source": "index",
        "packages": STACK,
        "base_packages": ["huggingface_hub>=1.0,<3"],
        "wheelhouse_dir": "",
        "index_url": "",
        "git_url": "",
        "git_ref": "",
        "git_subdirectory": "python",
        "patches": [],
        "patch_dir": "/opt/specgate/patches",
    }
    return plan_env(**{**args, **overrides})


def variables(result):
    return [problem.split(":")[0] for problem in result.problems]


def test_index_install_puts_base_packages_first_and_records_every_name():
    result = env_plan()
    assert result.problems == []
    assert result.requirements == ["huggingface_hub>=1.0,<3", *STACK]
    assert result.version_names == ["huggingface_hub", "sglang", "flashinfer-python", "sglang-kernel"]
    assert result.pip_args == ""


def test_custom_index_is_passed_to_pip():
    assert env_plan(index_url="https://pypi.example.internal/simple").pip_args == (
        "--index-url https://pypi.example.internal/simple"
    )


def test_wheelhouse_install_never_reaches_an_index():
    result = env_plan(source="wheelhouse", wheelhouse_dir="/opt/specgate/wheelhouse/sglang")
    assert result.pip_args == "--no-index --find-links /opt/specgate/wheelhouse/sglang"


def test_wheelhouse_source_without_wheelhouse_is_refused():
    assert variables(env_plan(source="wheelhouse")) == ["sglang_env_wheelhouse"]


def test_unpinned_stack_package_is_refused():
    result = env_plan(packages=["sglang>=0.5", "flashinfer-python==0.7.2"])
    assert variables(result) == ["sglang_env_packages"]
    assert "sglang>=0.5" in result.problems[0]


def test_git_source_installs_sglang_from_the_commit():
    result = env_plan(source="git", packages=STACK[1:], git_url="https://git.example/sglang.git", git_ref=COMMIT,
                      sglang_version="0.5.23")
    assert result.problems == []
    assert result.git_requirement == f"sglang @ git+https://git.example/sglang.git@{COMMIT}#subdirectory=python"
    assert "sglang" in result.version_names


def test_git_source_with_a_branch_is_refused():
    result = env_plan(source="git", packages=STACK[1:], git_url="https://git.example/sglang.git", git_ref="main")
    assert variables(result) == ["sglang_env_git_ref"]


def test_git_source_without_url_is_refused():
    assert variables(env_plan(source="git", packages=STACK[1:], git_ref=COMMIT)) == ["sglang_env_git_url"]


def test_git_source_with_sglang_also_pinned_is_refused():
    result = env_plan(source="git", git_url="https://git.example/sglang.git", git_ref=COMMIT)
    assert variables(result) == ["sglang_env_packages"]


def test_patches_get_names_from_their_file_and_default_strip():
    result = env_plan(patches=[{"src": "files/ddtree-29907.patch", "strip": 2}, {"src": "files/fix.patch"}])
    assert result.patches == [
        {
            "name": "ddtree-29907.patch",
            "src": "files/ddtree-29907.patch",
            "strip": 2,
            "path": "/opt/specgate/patches/ddtree-29907.patch",
            "provides": [],
        },
        {"name": "fix.patch", "src": "files/fix.patch", "strip": 1, "path": "/opt/specgate/patches/fix.patch",
         "provides": []},
    ]


@pytest.mark.parametrize(
    "patches",
    [[{"strip": 1}], [{"src": "a/x.patch"}, {"src": "b/x.patch"}], [{"src": "x.patch", "strip": -1}]],
)
def test_malformed_patch_entries_are_refused(patches):
    assert variables(env_plan(patches=patches)) == ["sglang_env_patches"]


def test_requirement_helpers():
    assert requirement_name("flashinfer-python[cu13]==0.7.2") == "flashinfer-python"
    assert requirement_name("specgate-sim==0.1.0") == "specgate-sim"
    assert is_pinned("flashinfer-python[cu13]==0.7.2")
    assert not is_pinned("huggingface_hub>=1.0,<3")
    assert variables(env_plan(packages=["==1.0"])) == ["sglang_env_packages"]
