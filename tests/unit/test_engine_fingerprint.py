"""engine_fingerprint: what the engine loads (every installed distribution, applied patches, env files) decides
the fingerprint, and nothing else does; the module reads a real venv and works in check mode on a bare host."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import venv
from pathlib import Path

import engine_fingerprint as module  # library/engine_fingerprint.py (tests/conftest.py puts library/ on sys.path)
import pytest
from ansible.module_utils.specgate.env.engine_fingerprint import (
    INVENTORY_SCRIPT,
    applied_patches,
    engine_content,
    fingerprint,
    installed_versions,
    normalize,
    parse_inventory,
    requested_versions,
)
from ansible.module_utils.testing import patch_module_args

pytestmark = pytest.mark.host

INVENTORY = {
    "sglang": {"name": "sglang", "version": "0.5.23", "files": "aa" * 8, "source": None},
    "flashinfer-python": {"name": "flashinfer_python", "version": "0.7.2", "files": "bb" * 8, "source": None},
    "sglang-kernel": {"name": "sglang-kernel", "version": "0.4.10", "files": "cc" * 8, "source": None},
}


def venv_fp(inventory=INVENTORY, patches=None, **kwargs) -> str:
    return fingerprint(engine_content(inventory, patches or {}, **kwargs))


def with_entry(key: str, **changes) -> dict:
    return {**INVENTORY, key: {**INVENTORY[key], **changes}}


def test_a_bumped_dependency_changes_the_fingerprint_not_only_a_requested_pin():
    base = venv_fp()
    assert venv_fp(with_entry("flashinfer-python", version="0.7.3")) != base
    assert venv_fp(with_entry("sglang-kernel", version="0.4.11")) != base
    added = {**INVENTORY, "triton": {"name": "triton", "version": "3.5.0", "files": None, "source": None}}
    assert venv_fp(added) != base
    removed = {key: value for key, value in INVENTORY.items() if key != "sglang-kernel"}
    assert venv_fp(removed) != base


def test_same_version_rebuilt_or_from_another_commit_is_a_change():
    base = venv_fp()
    assert venv_fp(with_entry("sglang", files="dd" * 8)) != base
    assert venv_fp(with_entry("sglang", source="0123456789abcdef0123456789abcdef01234567")) != base


def test_a_patch_applied_or_replaced_changes_the_fingerprint():
    base = venv_fp()
    one = venv_fp(patches={"ddtree": "1" * 64})
    assert one != base
    assert venv_fp(patches={"ddtree": "2" * 64}) != one


def test_env_file_content_and_facts_count_but_order_and_display_names_do_not():
    env = "CUDA_HOME=/opt/specgate/cuda/home\nFLASHINFER_CUDA_ARCH_LIST=12.0a\n"
    base = venv_fp(files={"env_file": env}, facts={"version": "13.0"})
    assert venv_fp(files={"env_file": env.replace("12.0a", "12.0f")}, facts={"version": "13.0"}) != base
    assert venv_fp(files={"env_file": env}, facts={"version": "13.1"}) != base
    reordered = dict(reversed(list(INVENTORY.items())))
    assert venv_fp(reordered, files={"env_file": env}, facts={"version": "13.0"}) == base
    renamed = with_entry("flashinfer-python", name="flashinfer-python")
    assert venv_fp(renamed, files={"env_file": env}, facts={"version": "13.0"}) == base


def test_pending_check_mode_marks_the_fingerprint():
    assert venv_fp(pending=True) != venv_fp()


def test_versions_are_read_by_normalized_name_and_missing_ones_are_none():
    assert normalize("Flashinfer_Python") == "flashinfer-python"
    versions = requested_versions(INVENTORY, ["sglang", "flashinfer_python", "sgl-kernel"])
    assert versions == {"sglang": "0.5.23", "flashinfer_python": "0.7.2", "sgl-kernel": None}
    installed = installed_versions(INVENTORY)
    assert installed == {"flashinfer_python": "0.7.2", "sglang": "0.5.23", "sglang-kernel": "0.4.10"}


def test_applied_patches_come_from_the_state_file():
    state = {"patches": {"b": {"sha256": "2" * 64, "strip": 1}, "a": {"sha256": "1" * 64, "strip": 2}}}
    assert applied_patches(state) == {"a": "1" * 64, "b": "2" * 64}
    assert applied_patches({"patches": {}}) == {}


def test_parse_inventory_refuses_what_is_not_an_inventory():
    with pytest.raises(ValueError, match="not a mapping"):
        parse_inventory("[]")
    with pytest.raises(ValueError, match="has no version"):
        parse_inventory('{"x": {"name": "x"}}')


def test_inventory_script_lists_this_interpreters_distributions():
    out = subprocess.run(
        [sys.executable, "-c", INVENTORY_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    inventory = parse_inventory(out)
    assert inventory["pytest"]["version"] == pytest.__version__
    assert inventory["pytest"]["files"]  # a wheel install records file hashes


# --- the module against a real venv -------------------------------------------------------------------------


def add_distribution(site: Path, name: str, version: str, content: str = "x = 1\n") -> None:
    """Install a minimal distribution by hand: its module, METADATA and a RECORD with hashes."""
    for old in site.glob(f"{name}-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    (site / f"{name}.py").write_text(content)
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    digest = base64.urlsafe_b64encode(hashlib.sha256(content.encode()).digest()).rstrip(b"=").decode()
    (info / "RECORD").write_text(f"{name}.py,sha256={digest},{len(content)}\n{info.name}/RECORD,,\n")


@pytest.fixture(scope="module")
def engine_venv(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("fp") / "venv"
    venv.create(root, with_pip=False)
    python = root / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return python, Path(site)


def run_module(capsys, check_mode=False, **args):
    with patch_module_args({**args, "_ansible_check_mode": check_mode}), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_module_fingerprints_a_venv_and_sees_a_bumped_pin_and_an_applied_patch(engine_venv, tmp_path, capsys):
    python, site = engine_venv
    add_distribution(site, "flashinfer_python", "0.7.2")
    args = {"python": str(python), "patch_state_dir": str(tmp_path / "state"), "names": ["flashinfer-python", "sglang"]}
    first = run_module(capsys, **args)
    assert first["changed"] is False
    assert first["present"] is True
    assert first["versions"] == {"flashinfer-python": "0.7.2", "sglang": None}
    assert first["installed"]["flashinfer_python"] == "0.7.2"
    assert run_module(capsys, **args)["fingerprint"] == first["fingerprint"]  # nothing changed: same fingerprint

    add_distribution(site, "flashinfer_python", "0.7.3")
    bumped = run_module(capsys, **args)
    assert bumped["versions"]["flashinfer-python"] == "0.7.3"
    assert bumped["fingerprint"] != first["fingerprint"]

    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "state.json").write_text(json.dumps({"patches": {"ddtree": {"sha256": "1" * 64}}}))
    patched = run_module(capsys, **args)
    assert patched["patches"] == {"ddtree": "1" * 64}
    assert patched["fingerprint"] != bumped["fingerprint"]


def test_module_on_a_bare_host_in_check_mode_reports_no_venv(tmp_path, capsys):
    args = {"python": str(tmp_path / "venv" / "bin" / "python"), "names": ["sglang"]}
    result = run_module(capsys, check_mode=True, **args)
    assert result["present"] is False
    assert result["versions"] == {}
    assert result["installed"] == {}
    failed = run_module(capsys, **args)
    assert failed["failed"] is True
    assert "does not exist" in failed["msg"]


def test_module_without_a_venv_hashes_files_and_facts(capsys):
    one = run_module(capsys, files={"env_file": "CUDA_HOME=/a\n"}, facts={"version": "13.0"})
    two = run_module(capsys, files={"env_file": "CUDA_HOME=/b\n"}, facts={"version": "13.0"})
    assert one["present"] is True
    assert one["files"]["env_file"] != two["files"]["env_file"]
    assert one["fingerprint"] != two["fingerprint"]
