#!/usr/bin/env python3
"""Install the collections pinned in requirements.yml into ./collections.

Galaxy first when reachable (the usual path), else the `ansible` wheel from PyPI, which bundles the
same pinned versions: the wheel is a zip, so only the wanted collections are extracted. A collection
already present at the pinned version is left alone, so a second run changes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def installed_version(collections_dir: Path, fqcn: str) -> str | None:
    namespace, name = fqcn.split(".")
    manifest = collections_dir / "ansible_collections" / namespace / name / "MANIFEST.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text())["collection_info"]["version"]


def missing_collections(collections_dir: Path, wanted: list[dict]) -> list[dict]:
    return [c for c in wanted if installed_version(collections_dir, c["name"]) != str(c["version"])]


def install_from_galaxy(collections_dir: Path, missing: list[dict]) -> bool:
    specs = [f"{c['name']}:=={c['version']}" for c in missing]
    galaxy = shutil.which("ansible-galaxy", path=str(Path(sys.executable).parent)) or "ansible-galaxy"
    cmd = [galaxy, "collection", "install", "--force", "--timeout", "15", "-p", str(collections_dir), *specs]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"galaxy unavailable ({exc}); using the PyPI bundle", file=sys.stderr)
        return False
    if done.returncode != 0:
        print("galaxy unavailable; using the PyPI bundle", file=sys.stderr)
        return False
    return True


def install_from_pypi_bundle(collections_dir: Path, missing: list[dict], bundle: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", "3.12", "-d", tmp, bundle],
            check=True,
        )
        wheel = next(Path(tmp).glob("ansible-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            for collection in missing:
                namespace, name = collection["name"].split(".")
                prefix = f"ansible_collections/{namespace}/{name}/"
                target = collections_dir / "ansible_collections" / namespace / name
                if target.exists():
                    shutil.rmtree(target)
                for member in archive.namelist():
                    if member.startswith(prefix) and not member.endswith("/"):
                        archive.extract(member, collections_dir)
                got = installed_version(collections_dir, collection["name"])
                if got != str(collection["version"]):
                    sys.exit(f"{bundle} bundles {collection['name']} {got}, requirements.yml pins "
                             f"{collection['version']}: update requirements/collections-bundle.txt or the pin")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", choices=["auto", "galaxy", "pypi"],
                        default=os.environ.get("SPECGATE_COLLECTIONS_SOURCE", "auto"))
    args = parser.parse_args()
    spec = yaml.safe_load((ROOT / "requirements.yml").read_text())
    collections_dir = ROOT / "collections"
    missing = missing_collections(collections_dir, spec["collections"])
    if not missing:
        print("collections: up to date")
        return 0
    if args.source in ("auto", "galaxy") and install_from_galaxy(collections_dir, missing):
        print(f"collections: installed {len(missing)} from galaxy")
        return 0
    if args.source == "galaxy":
        return 1
    bundle = (ROOT / "requirements" / "collections-bundle.txt").read_text().split("#")[0].strip()
    install_from_pypi_bundle(collections_dir, missing, bundle)
    print(f"collections: installed {len(missing)} from {bundle}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
