"""The converged test host's key (scripts/converged_image.py): it covers what builds the host, so a snapshot built from
other inputs is never reused, and nothing else, so an unrelated change reuses it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from script_loader import ROOT, load_script

converged_image = load_script("converged_image")
BASE = "sha256:0000base"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the project's inputs (and a file that is not one), to change without touching the checkout."""
    for name in converged_image.INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tmp_path / name)
    shutil.copy2(ROOT / "README.md", tmp_path / "README.md")
    return tmp_path


def key(root: Path, base: str = BASE) -> str:
    return converged_image.inputs_key(root, base)


@pytest.mark.parametrize(
    "changed",
    [
        "roles/cuda_toolkit/defaults/main.yml",  # a role's input
        "roles/sglang_env/tasks/main.yml",  # a role's task
        "module_utils/specgate/env/engine_fingerprint.py",  # host code a module ships
        "inventory/demo/group_vars/sglang_hosts/engine.yml",  # the settings the host is built with
        "sim/specgate_sim/server.py",  # the engine the venv installs
        "requirements/controller.txt",  # the pins
        "playbooks/demo_host.yml",  # what the host is shipped
    ],
)
def test_a_change_to_what_builds_the_host_changes_the_key(tree, changed):
    before = key(tree)
    path = tree / changed
    assert path.is_file(), f"{changed} is not in the inputs' copy"
    path.write_bytes(path.read_bytes() + b"\n# changed\n")
    assert key(tree) != before
    assert converged_image.needs_build(before, key(tree))


def test_a_new_file_under_an_input_changes_the_key(tree):
    before = key(tree)
    (tree / "roles" / "sglang_env" / "tasks" / "new_step.yml").write_text("---\n")
    assert key(tree) != before


def test_another_base_image_changes_the_key(tree):
    assert key(tree, "sha256:1111base") != key(tree, BASE)


def test_a_file_that_does_not_build_the_host_and_a_touch_keep_the_key(tree):
    before = key(tree)
    (tree / "README.md").write_text("# other words\n")
    path = tree / "roles" / "cuda_toolkit" / "defaults" / "main.yml"
    os.utime(path, (1, 1))
    (tree / "sim" / "specgate_sim" / "__pycache__").mkdir(exist_ok=True)
    (tree / "sim" / "specgate_sim" / "__pycache__" / "server.cpython-311.pyc").write_bytes(b"bytecode")
    assert key(tree) == before
    assert not converged_image.needs_build(before, key(tree))


def test_an_image_without_the_label_or_from_other_inputs_is_rebuilt():
    assert converged_image.needs_build(None, "abc")
    assert converged_image.needs_build("<no value>", "abc")
    assert converged_image.needs_build("abd", "abc")
    assert not converged_image.needs_build("abc", "abc")


def test_an_input_path_that_no_longer_exists_is_an_error(tree):
    shutil.rmtree(tree / "templates")
    with pytest.raises(FileNotFoundError, match="templates"):
        key(tree)
