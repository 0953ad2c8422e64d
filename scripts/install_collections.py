#!/usr/bin/env python3
"""Install the collections pinned in requirements.yml into ./collections.

Sources, first that applies:
  1. a directory of collection tarballs, when one is given (SPECGATE_COLLECTIONS_DIR=DIR or --from-dir DIR): the
     standard offline path for an air-gapped controller, as `ansible-galaxy collection download -r requirements.yml
     -p DIR` makes it (tarballs and a requirements.yml). Installed with `ansible-galaxy collection install --offline`,
     contacting nothing. A pinned collection the directory lacks at its pinned version fails the run, naming it:
     there is no fallback to the network.
  2. Galaxy, when it answers (the usual path);
  3. else the `ansible` wheel from PyPI, which bundles the same pinned versions: the wheel is a zip, so only the
     wanted collections are extracted.
A collection already present at the pinned version is left alone, so a second run changes nothing.

Making that directory on a machine that can reach Galaxy, or from this checkout's ./collections:
  --download DIR   `ansible-galaxy collection download` of requirements.yml into DIR; when Galaxy does not answer,
                   packs the pinned collections installed in ./collections instead (what --pack does)
  --pack DIR       packs the pinned collections installed in ./collections into installable tarballs in DIR, with
                   the requirements.yml `download` writes
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DIR_VARIABLE = "SPECGATE_COLLECTIONS_DIR"


def installed_version(collections_dir: Path, fqcn: str) -> str | None:
    namespace, name = fqcn.split(".")
    manifest = collections_dir / "ansible_collections" / namespace / name / "MANIFEST.json"
    if not manifest.is_file():
        return None
    return json.loads(manifest.read_text())["collection_info"]["version"]


def missing_collections(collections_dir: Path, wanted: list[dict]) -> list[dict]:
    return [c for c in wanted if installed_version(collections_dir, c["name"]) != str(c["version"])]


def ansible_galaxy() -> str:
    """The ansible-galaxy next to this Python (the venv's), else the one on PATH."""
    return shutil.which("ansible-galaxy", path=str(Path(sys.executable).parent)) or "ansible-galaxy"


def install_from_galaxy(collections_dir: Path, missing: list[dict]) -> bool:
    specs = [f"{c['name']}:=={c['version']}" for c in missing]
    cmd = [ansible_galaxy(), "collection", "install", "--force", "--timeout", "15", "-p", str(collections_dir), *specs]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"galaxy unavailable ({exc}); using the PyPI bundle ({DIR_VARIABLE} installs from tarballs)",
              file=sys.stderr)
        return False
    if done.returncode != 0:
        print(f"galaxy unavailable; using the PyPI bundle ({DIR_VARIABLE} installs from tarballs)", file=sys.stderr)
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


# --- a directory of collection tarballs -------------------------------------------------------------------------


def tarball_info(path: Path) -> dict | None:
    """The collection_info of a collection artifact (its MANIFEST.json, the first member of what ansible-galaxy
    builds), or None for a file that is not one."""
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar:
                if member.name in ("MANIFEST.json", "./MANIFEST.json") and member.isfile():
                    return json.load(tar.extractfile(member))["collection_info"]
    except (OSError, tarfile.TarError, ValueError, KeyError, TypeError):
        return None
    return None


def tarballs_in(source_dir: Path) -> dict[tuple[str, str], tuple[Path, dict]]:
    """(fqcn, version) → (tarball, collection_info) for every collection artifact in the directory."""
    found = {}
    for path in sorted(source_dir.glob("*.tar.gz")):
        info = tarball_info(path)
        if info:
            found[(f"{info['namespace']}.{info['name']}", str(info["version"]))] = (path, info)
    return found


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else -1 for part in version.partition("+")[0].split("."))


def install_from_dir(collections_dir: Path, missing: list[dict], source_dir: Path, label: str) -> list[str]:
    """Install the missing pinned collections from the tarballs in source_dir, offline, with the dependencies the
    directory holds (as `download` puts them there); fail naming `label` and what is lacking. Returns notes."""
    if not source_dir.is_dir():
        sys.exit(f"collections: {label}={source_dir} is not a directory: make it with `scripts/install_collections.py "
                 f"--download DIR` on a machine that has the collections, or unset {label}")
    available = tarballs_in(source_dir)
    lacking = []
    for collection in missing:
        name, version = collection["name"], str(collection["version"])
        if (name, version) not in available:
            others = sorted(v for n, v in available if n == name)
            lacking.append(f"{name} {version}" + (f" (it has {', '.join(others)})" if others else ""))
    if lacking:
        sys.exit(f"collections: {label}={source_dir} lacks the pinned {'; '.join(lacking)} (requirements.yml): "
                 f"add the tarballs (`scripts/install_collections.py --download DIR` writes them) or unset {label}")

    chosen = {c["name"]: available[(c["name"], str(c["version"]))] for c in missing}
    notes = []
    queue = list(chosen.values())
    while queue:  # the dependencies the directory holds, transitively (the PyPI bundle installs none)
        _, info = queue.pop()
        for dependency in sorted(info.get("dependencies") or {}):
            if dependency in chosen:
                continue
            versions = sorted((v for n, v in available if n == dependency), key=_version_key)
            if not versions:
                notes.append(f"{info['namespace']}.{info['name']} depends on {dependency}, which {source_dir} "
                             "does not hold: not installed")
                continue
            chosen[dependency] = available[(dependency, versions[-1])]
            queue.append(chosen[dependency])

    cmd = [ansible_galaxy(), "collection", "install", "--offline", "--no-deps", "--force",
           "-p", str(collections_dir), *(str(path) for path, _ in chosen.values())]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"collections: installing from {label}={source_dir} failed:\n{done.stdout}{done.stderr}")
    for collection in missing:
        got = installed_version(collections_dir, collection["name"])
        if got != str(collection["version"]):
            sys.exit(f"collections: {label}={source_dir}: installed {collection['name']} is {got}, "
                     f"requirements.yml pins {collection['version']}")
    return notes


def pack_installed(collections_dir: Path, collection: dict, dest: Path) -> Path:
    """An installable artifact (ns-name-version.tar.gz) of an installed collection: MANIFEST.json, FILES.json and
    the files FILES.json lists, each checked against its checksum. A copy out of the PyPI bundle lacks the tests/ and
    CI files Galaxy's tarball has, so FILES.json keeps only what is present, and MANIFEST.json's checksum of
    FILES.json follows (ansible-galaxy checks each extracted file against FILES.json)."""
    namespace, name = collection["name"].split(".")
    src = collections_dir / "ansible_collections" / namespace / name
    got = installed_version(collections_dir, collection["name"])
    if got != str(collection["version"]):
        sys.exit(f"collections: {collection['name']} {collection['version']} is not installed in {collections_dir} "
                 f"({'found ' + got if got else 'absent'}): run scripts/install_collections.py first")
    manifest = json.loads((src / "MANIFEST.json").read_text())
    files_manifest = json.loads((src / "FILES.json").read_text())
    kept = []
    for entry in files_manifest["files"]:
        path = src / entry["name"]
        if entry["name"] == ".":
            kept.append(entry)
        elif entry["ftype"] == "dir":
            if path.is_dir() and not path.is_symlink():
                kept.append(entry)
        elif path.is_file() and not path.is_symlink():
            if hashlib.sha256(path.read_bytes()).hexdigest() != entry["chksum_sha256"]:
                sys.exit(f"collections: {path} differs from its checksum in FILES.json: reinstall {collection['name']}")
            kept.append(entry)
    files_json = json.dumps({**files_manifest, "files": kept}, indent=True).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    manifest_json = json.dumps(manifest, indent=True).encode()

    dest.mkdir(parents=True, exist_ok=True)
    target = dest / f"{namespace}-{name}-{collection['version']}.tar.gz"
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(partial, mode="w:gz") as tar:
        for member_name, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            info = tarfile.TarInfo(member_name)
            info.size, info.mode, info.mtime = len(data), 0o644, int((src / member_name).stat().st_mtime)
            tar.addfile(info, io.BytesIO(data))
        for entry in kept:
            if entry["name"] == ".":
                continue
            path = src / entry["name"]
            info = tar.gettarinfo(str(path), arcname=entry["name"])
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o755 if info.isdir() or info.mode & 0o100 else 0o644
            if info.isdir():
                tar.addfile(info)
            else:
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    partial.replace(target)
    return target


def write_dir_requirements(dest: Path, tarballs: list[Path]) -> None:
    """The requirements.yml `ansible-galaxy collection download` writes next to its tarballs, for
    `cd DIR && ansible-galaxy collection install --offline -r requirements.yml` by hand."""
    entries = []
    for path in sorted(tarballs):
        info = tarball_info(path)
        if info:
            entries.append({"name": path.name, "version": str(info["version"])})
    (dest / "requirements.yml").write_text(yaml.safe_dump({"collections": entries}, sort_keys=False))


def pack_dir(collections_dir: Path, wanted: list[dict], dest: Path) -> list[Path]:
    tarballs = [pack_installed(collections_dir, collection, dest) for collection in wanted]
    write_dir_requirements(dest, list(dest.glob("*.tar.gz")))
    return tarballs


def download_dir(requirements_file: Path, collections_dir: Path, wanted: list[dict], dest: Path) -> str:
    """Fill dest from Galaxy (`ansible-galaxy collection download`), else pack ./collections. Returns the source."""
    cmd = [ansible_galaxy(), "collection", "download", "--timeout", "15", "-r", str(requirements_file), "-p", str(dest)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        why = (done.stderr.strip().splitlines() or [f"rc {done.returncode}"])[-1] if done.returncode else ""
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    if not why:
        available = tarballs_in(dest)
        lacking = [f"{c['name']} {c['version']}" for c in wanted if (c["name"], str(c["version"])) not in available]
        if lacking:
            sys.exit(f"collections: ansible-galaxy collection download left out {', '.join(lacking)} in {dest}")
        return "galaxy"
    print(f"galaxy unavailable ({why}); packing the pinned collections installed in {collections_dir}", file=sys.stderr)
    pack_dir(collections_dir, wanted, dest)
    return str(collections_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=["auto", "galaxy", "pypi"],
                        default=os.environ.get("SPECGATE_COLLECTIONS_SOURCE") or "auto",
                        help="where to install from when no tarball directory is given (SPECGATE_COLLECTIONS_SOURCE)")
    parser.add_argument("--from-dir", type=Path, metavar="DIR",
                        help=f"install from this directory of collection tarballs, offline ({DIR_VARIABLE})")
    make = parser.add_mutually_exclusive_group()
    make.add_argument("--download", type=Path, metavar="DIR",
                      help="write the pinned collections' tarballs into DIR (Galaxy, else packed from ./collections)")
    make.add_argument("--pack", type=Path, metavar="DIR",
                      help="pack the pinned collections installed in ./collections into tarballs in DIR")
    parser.add_argument("--requirements-file", type=Path, default=ROOT / "requirements.yml", help=argparse.SUPPRESS)
    parser.add_argument("--collections-path", type=Path, default=ROOT / "collections", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    wanted = yaml.safe_load(args.requirements_file.read_text())["collections"]
    collections_dir = args.collections_path

    if args.download or args.pack:
        if args.download:
            source = download_dir(args.requirements_file, collections_dir, wanted, args.download)
        else:
            pack_dir(collections_dir, wanted, args.pack)
            source = str(collections_dir)
        dest = args.download or args.pack
        print(f"collections: {len(wanted)} pinned tarballs in {dest} (from {source}); on the air-gapped controller: "
              f"{DIR_VARIABLE}={dest} scripts/bootstrap")
        return 0

    if args.from_dir:
        source_dir, label = args.from_dir, "--from-dir"
    elif os.environ.get(DIR_VARIABLE):
        source_dir, label = Path(os.environ[DIR_VARIABLE]), DIR_VARIABLE
    else:
        source_dir, label = None, None
    if source_dir and args.source != "auto":
        parser.error(f"{label} and --source/SPECGATE_COLLECTIONS_SOURCE={args.source} exclude each other")

    missing = missing_collections(collections_dir, wanted)
    if not missing:
        print("collections: up to date")
        return 0
    if source_dir:
        for note in install_from_dir(collections_dir, missing, source_dir, label):
            print(f"collections: {note}")
        print(f"collections: installed {len(missing)} offline from {source_dir}")
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
