"""Collections are installed only when missing or at another version than pinned."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_collections.py"
_spec = importlib.util.spec_from_file_location("install_collections", SCRIPT)
install_collections = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(install_collections)


def _install_fake(root: Path, fqcn: str, version: str) -> None:
    namespace, name = fqcn.split(".")
    target = root / "ansible_collections" / namespace / name
    target.mkdir(parents=True)
    (target / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": version}}))


def test_pinned_version_present_is_not_reinstalled(tmp_path: Path) -> None:
    _install_fake(tmp_path, "ansible.posix", "2.2.2")
    assert install_collections.missing_collections(tmp_path, [{"name": "ansible.posix", "version": "2.2.2"}]) == []


def test_other_version_or_absent_collection_is_missing(tmp_path: Path) -> None:
    _install_fake(tmp_path, "ansible.posix", "1.0.0")
    wanted = [{"name": "ansible.posix", "version": "2.2.2"}, {"name": "community.general", "version": "13.5.0"}]
    assert install_collections.missing_collections(tmp_path, wanted) == wanted


def test_project_collections_match_requirements() -> None:
    root = SCRIPT.parent.parent
    import yaml

    wanted = yaml.safe_load((root / "requirements.yml").read_text())["collections"]
    assert install_collections.missing_collections(root / "collections", wanted) == [], "run scripts/bootstrap"
