"""sglang_env's plan: what the venv gets, from where, and the requests it refuses by variable name."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.env.pins import is_pinned, name_of, sglang_pin
from ansible.module_utils.specgate.env.sglang_env_plan import plan_env
from specgate_pins import FilterModule

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
    assert name_of("flashinfer-python[cu13]==0.7.2") == "flashinfer-python"
    assert name_of("specgate-sim==0.1.0") == "specgate-sim"
    assert is_pinned("flashinfer-python[cu13]==0.7.2")
    assert is_pinned("flashinfer-python == 0.7.2 ; python_version >= '3.10'")
    assert not is_pinned("huggingface_hub>=1.0,<3")
    assert not is_pinned("sglang==0.5.*")
    assert not is_pinned("sglang @ https://example.invalid/sglang-0.5.23-py3-none-any.whl")
    assert variables(env_plan(packages=["==1.0"])) == ["sglang_env_packages"]
    assert "not a requirement pip can read" in env_plan(packages=["==1.0"]).problems[0]


@pytest.mark.parametrize(
    ("packages", "pin"),
    [
        (["flashinfer-python==0.7.2", "sglang[all]==0.5.19", "sglang-kernel==0.4.10"], "0.5.19"),
        (["sglang-kernel==0.4.10"], ""),
        # Read as pip reads them: spaces, a marker, the name's case and separators.
        (["sglang == 0.5.23"], "0.5.23"),
        (['sglang==0.5.23; python_version >= "3.10"'], "0.5.23"),
        (["SGLang==0.5.23"], "0.5.23"),
        (["sglang>=0.5.23"], ""),
    ],
)
def test_the_sglang_pin_is_read_as_pip_reads_it(packages, pin):
    assert sglang_pin(packages) == pin


@pytest.mark.parametrize("line", ["sglang == 0.5.23", 'sglang==0.5.23; python_version >= "3.10"'])
def test_a_pin_pip_accepts_names_the_release(line):
    plan = env_plan(packages=[line, "flashinfer-python==0.7.2"])
    assert plan.problems == []
    assert plan.engine["sglang_version"] == "0.5.23"


@pytest.mark.parametrize(
    ("version", "pin", "reason"),
    [
        ("0.5.23", "0.5.23.post1", "is a post-release of 0.5.23"),
        ("0.5.23", "0.5.23rc1", "is a pre-release"),
        ("0.5.23", "0.5.19", "says 0.5.23 but sglang_env_packages pins sglang==0.5.19"),
    ],
)
def test_a_stated_release_does_not_hide_what_the_pin_installs(version, pin, reason):
    plan = env_plan(packages=[f"sglang=={pin}"], sglang_version=version)
    assert len(plan.problems) == 1, plan.problems
    assert reason in plan.problems[0]


def test_a_stated_release_that_agrees_with_the_pin_passes():
    plan = env_plan(packages=["sglang==0.5.23"], sglang_version="0.5.23")
    assert plan.problems == []
    assert plan.engine["pin"] == "0.5.23"


PINNED = {"version_variable": "sglang_env_packages", "sglang_version": "0.5.23", "pin": "0.5.23"}
GIT = {"version_variable": "sglang_env_sglang_version", "sglang_version": "0.5.23", "pin": ""}


@pytest.mark.parametrize(
    ("installed", "engine", "refused"),
    [
        ("0.5.23", PINNED, False),
        ("", PINNED, False),  # no SGLang in the venv (the demo's engine is the sim): nothing to compare
        ("0.5.23.post1", PINNED, True),  # the release prefix matches; the pin does not
        ("0.5.19", PINNED, True),
        ("0.5.23.dev12+g0123abc", GIT, False),  # a git commit of 0.5.23
        ("0.5.24.dev3", GIT, True),
        ("not-a-version", GIT, True),
    ],
)
def test_the_installed_sglang_must_be_the_engine_the_plan_published(installed, engine, refused):
    refusal = FilterModule().filters()["sglang_env_install_refusal"](installed, engine)
    assert bool(refusal) is refused
    if refused:
        assert refusal.startswith(f"{engine['version_variable']}: the venv's SGLang is {installed}")


def test_the_router_reads_its_pins_as_pip_does():
    filters = FilterModule().filters()
    lines = ["sglang-router == 0.3.2", "SGLang_Router[all]==0.3.2", "sglang-router>=0.3", "==0.3"]
    assert filters["specgate_unpinned"](lines) == ["sglang-router>=0.3", "==0.3"]
    assert filters["specgate_requirement_names"](lines[:3], "sglang_router_packages") == ["sglang-router"] * 3
    with pytest.raises(ValueError, match=r"^sglang_router_packages: '==0\.3' is not a requirement pip can read"):
        filters["specgate_requirement_names"](lines[3:], "sglang_router_packages")


@pytest.mark.parametrize(
    ("packages", "said"),
    [
        # 0.5.19's FlashInfer beside 0.5.23: the catalog names the release that goes with the pin.
        (["sglang==0.5.23", "flashinfer-python[cu13]==0.6.18", "sglang-kernel==0.4.10"],
         "pins flashinfer-python==0.6.18, but SGLang 0.5.23 requires flashinfer-python==0.7.2 (its wheel's "
         "Requires-Dist); pip would refuse the set on the host after downloading it. Fix: pin "
         "flashinfer-python==0.7.2, or pin sglang==0.5.19, the release that pins flashinfer-python==0.6.18."),
        # A kernel no catalogued release pins, spelled as pip allows: no release to suggest.
        (["sglang==0.5.23", "flashinfer-python==0.7.2", "SGLang_Kernel == 0.4.11"],
         "pins SGLang_Kernel==0.4.11, but SGLang 0.5.23 requires SGLang_Kernel==0.4.10 (its wheel's Requires-Dist); "
         "pip would refuse the set on the host after downloading it. Fix: pin SGLang_Kernel==0.4.10."),
        (["sglang==0.5.19", "torch==2.14.1"], "SGLang 0.5.19 requires torch==2.13.0"),
    ],
    ids=["older-flashinfer", "unknown-kernel", "torch"],
)
def test_a_companion_pinned_apart_from_what_the_sglang_wheel_pins_is_refused_in_the_plan(packages, said):
    problems = env_plan(packages=packages).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith("sglang_env_packages: ")
    assert said in problems[0]


@pytest.mark.parametrize(
    "packages",
    [STACK, ["sglang==0.5.19", "flashinfer-python==0.6.18", "sglang-kernel==0.4.6.post1", "torch==2.13.0"],
     ["sglang==0.5.23", "flashinfer-python>=0.7"], ["sglang==0.5.23", "transformers==5.3.0"]],
    ids=["0.5.23-stack", "0.5.19-stack", "unpinned-companion", "not-a-companion"],
)
def test_the_stack_a_release_pins_or_no_companion_pin_is_accepted(packages):
    # (An unpinned line is refused by the pin rule, not as a stack mismatch.)
    assert not [p for p in env_plan(packages=packages).problems if "Requires-Dist" in p]
