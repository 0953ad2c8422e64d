"""venv_patches: patches land once, survive re-runs and reinstalls, replace older versions, refuse conflicts."""

from __future__ import annotations

import json

import pytest
import venv_patches as module  # library/venv_patches.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.env.venv_patches import Action, Probe, decide, sha256_file
from ansible.module_utils.testing import patch_module_args

ORIGINAL = "def algorithms():\n    return ['EAGLE', 'DFLASH']\n"
PATCH_V1 = """--- a/python/sglang/spec.py
+++ b/python/sglang/spec.py
@@ -1,2 +1,2 @@
 def algorithms():
-    return ['EAGLE', 'DFLASH']
+    return ['EAGLE', 'DFLASH', 'DDTREE']
"""
PATCH_V2 = """--- a/python/sglang/spec.py
+++ b/python/sglang/spec.py
@@ -1,2 +1,2 @@
 def algorithms():
-    return ['EAGLE', 'DFLASH']
+    return ['EAGLE', 'DFLASH', 'DDTREE', 'DDTREE_V2']
"""
CONFLICTING = PATCH_V1.replace("-    return ['EAGLE', 'DFLASH']", "-    return ['NGRAM']")

# GNU patch is a host package sglang_env installs (sglang_env_host_packages): a machine without it fails here.
pytestmark = pytest.mark.host


@pytest.fixture
def tree(tmp_path):
    site = tmp_path / "site-packages"
    (site / "sglang").mkdir(parents=True)
    (site / "sglang" / "spec.py").write_text(ORIGINAL)
    return tmp_path


def run_module(tree, patch_text, capsys, check_mode=False):
    patch_file = tree / "ddtree.patch"
    patch_file.write_text(patch_text)
    args = {
        "patches": [{"name": "ddtree", "path": str(patch_file), "strip": 2}],
        "target": str(tree / "site-packages"),
        "state_dir": str(tree / "state"),
        "_ansible_check_mode": check_mode,
    }
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def source(tree):
    return (tree / "site-packages" / "sglang" / "spec.py").read_text()


def test_patch_applies_once_and_records_its_checksum(tree, capsys):
    result = run_module(tree, PATCH_V1, capsys)
    assert result["changed"] is True
    assert result["patches"][0]["action"] == "apply"
    assert "'DDTREE'" in source(tree)
    state = json.loads((tree / "state" / "state.json").read_text())
    assert state["patches"]["ddtree"]["sha256"] == sha256_file(tree / "ddtree.patch")


def test_second_run_changes_nothing(tree, capsys):
    run_module(tree, PATCH_V1, capsys)
    result = run_module(tree, PATCH_V1, capsys)
    assert result["changed"] is False
    assert result["patches"][0]["action"] == "skip"
    assert source(tree).count("DDTREE") == 1


def test_reinstalled_package_gets_the_patch_again(tree, capsys):
    run_module(tree, PATCH_V1, capsys)
    (tree / "site-packages" / "sglang" / "spec.py").write_text(ORIGINAL)
    result = run_module(tree, PATCH_V1, capsys)
    assert result["patches"][0]["action"] == "apply"
    assert "'DDTREE'" in source(tree)


def test_changed_patch_replaces_the_older_version(tree, capsys):
    run_module(tree, PATCH_V1, capsys)
    result = run_module(tree, PATCH_V2, capsys)
    assert result["patches"][0]["action"] == "replace"
    assert source(tree) == "def algorithms():\n    return ['EAGLE', 'DFLASH', 'DDTREE', 'DDTREE_V2']\n"


def test_conflicting_patch_fails_naming_the_variable_and_leaves_the_tree(tree, capsys):
    result = run_module(tree, CONFLICTING, capsys)
    assert result["failed"] is True
    assert result["msg"].startswith("sglang_env_patches: patch ddtree")
    assert source(tree) == ORIGINAL
    assert not (tree / "state" / "state.json").exists()


def run_without_patches(tree, capsys, check_mode=False):
    args = {"patches": [], "target": str(tree / "site-packages"), "state_dir": str(tree / "state"),
            "_ansible_check_mode": check_mode}  # fmt: skip
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_a_patch_removed_from_the_list_is_reversed_so_the_venv_matches_the_declared_patches(tree, capsys):
    """Removing a patch from sglang_env_patches once left it applied in the venv."""
    run_module(tree, PATCH_V1, capsys)
    dry = run_without_patches(tree, capsys, check_mode=True)
    assert (dry["changed"], dry["patches"]) == (True, [{"name": "ddtree", "sha256": sha256_file(tree / "ddtree.patch"),
                                                        "action": "remove"}])  # fmt: skip
    assert "'DDTREE'" in source(tree), "check mode changes nothing"
    result = run_without_patches(tree, capsys)
    assert result["changed"] is True
    assert [p["action"] for p in result["patches"]] == ["remove"]
    assert source(tree) == ORIGINAL
    assert json.loads((tree / "state" / "state.json").read_text())["patches"] == {}
    again = run_without_patches(tree, capsys)
    assert (again["changed"], again["patches"]) == (False, [])


def test_a_removed_patch_a_reinstall_already_took_out_is_forgotten(tree, capsys):
    run_module(tree, PATCH_V1, capsys)
    (tree / "site-packages" / "sglang" / "spec.py").write_text(ORIGINAL)
    result = run_without_patches(tree, capsys)
    assert [p["action"] for p in result["patches"]] == ["forget"]
    assert source(tree) == ORIGINAL
    assert json.loads((tree / "state" / "state.json").read_text())["patches"] == {}


def test_a_removed_patch_whose_changes_were_edited_over_fails_naming_the_variable(tree, capsys):
    run_module(tree, PATCH_V1, capsys)
    (tree / "site-packages" / "sglang" / "spec.py").write_text("def algorithms():\n    return ['NGRAM']\n")
    result = run_without_patches(tree, capsys)
    assert result["failed"] is True
    assert result["msg"].startswith("sglang_env_patches: patch ddtree was removed from sglang_env_patches")
    assert "Fix: reinstall the venv" in result["msg"]


def test_check_mode_reports_the_apply_without_touching_the_tree(tree, capsys):
    result = run_module(tree, PATCH_V1, capsys, check_mode=True)
    assert result["changed"] is True
    assert result["patches"][0]["action"] == "apply"
    assert source(tree) == ORIGINAL


@pytest.mark.parametrize(
    ("recorded", "probe", "action"),
    [
        ("a", Probe(forward_ok=False, reverse_ok=True, old_reverse_ok=False), Action.SKIP),
        (None, Probe(forward_ok=False, reverse_ok=True, old_reverse_ok=False), Action.RECORD),
        ("old", Probe(forward_ok=False, reverse_ok=False, old_reverse_ok=True), Action.REPLACE),
        ("a", Probe(forward_ok=True, reverse_ok=False, old_reverse_ok=False), Action.APPLY),
        (None, Probe(forward_ok=False, reverse_ok=False, old_reverse_ok=False), Action.CONFLICT),
    ],
)
def test_decision_table(recorded, probe, action):
    assert decide(recorded, "a", probe) is action
