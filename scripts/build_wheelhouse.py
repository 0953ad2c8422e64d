#!/usr/bin/env python3
"""Build a wheelhouse on the controller for hosts that can't (or shouldn't) reach a package index.

Air-gapped GPU hosts are common, and the podman test hosts here cannot verify PyPI's certificate
chain either, so specgate ships packages to hosts as a directory of wheels that sglang_env installs
with `--no-index --find-links`. Wheels are fetched for the *host's* interpreter (Debian 12: CPython
3.11, manylinux x86_64), not the controller's. The sim package is built from sim/ when asked for.
A wheelhouse whose inputs did not change is reused as is (stamp file), so repeated runs are instant. Builders of
one wheelhouse take turns (a lock beside it): molecule scenarios in parallel lanes share theirs. Builders of different
wheelhouses run side by side, so each builds the sim from its own copy of sim/ (setuptools writes build/ and *.egg-info
into the tree it builds; two builds in one tree break each other).

    scripts/build_wheelhouse.py --out .cache/wheelhouse/sim --with-sim aiohttp==3.13.2 ...
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Newest first; NVIDIA's curand and nvvm wheels carry the older 2_27 and 2010/2_12 tags.
PLATFORMS = ["manylinux_2_36_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64", "linux_x86_64", "any"]


def sim_source_digest() -> str:
    """Digest of what goes into the sim wheel (its package and pyproject), so edits elsewhere don't rebuild it."""
    digest = hashlib.sha256()
    sources = [ROOT / "sim" / "pyproject.toml", *sorted((ROOT / "sim" / "specgate_sim").rglob("*.py"))]
    for path in sources:
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_sim_wheel(out: Path) -> None:
    """Build the specgate-sim wheel into ``out`` from a private copy of its sources (never in the shared tree)."""
    with tempfile.TemporaryDirectory(prefix="specgate-sim-build-") as scratch:
        source = Path(scratch) / "sim"
        shutil.copytree(ROOT / "sim", source,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", ".pytest_cache"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "-w", str(out), str(source)], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--python-version", default="3.11", help="the host interpreter's version (Debian 12: 3.11)")
    parser.add_argument("--with-sim", action="store_true", help="also build specgate-sim (with its [fixtures] extra)")
    parser.add_argument("--no-deps", action="store_true", help="exactly the listed pins, without their dependencies")
    parser.add_argument("requirements", nargs="*", help="pinned requirement specifiers")
    args = parser.parse_args()

    stamp_input = "\n".join([args.python_version, str(args.no_deps), *sorted(args.requirements),
                             sim_source_digest() if args.with_sim else ""])
    stamp = hashlib.sha256(stamp_input.encode()).hexdigest()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out.with_name(args.out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
        return build(args, stamp)


def build(args: argparse.Namespace, stamp: str) -> int:
    """Fill ``args.out`` with the wheels asked for, unless its stamp says it already holds them."""
    stamp_file = args.out / ".specgate-wheelhouse"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        print(f"wheelhouse {args.out}: up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.whl"):
        old.unlink()

    wanted = list(args.requirements)
    if args.with_sim:
        build_sim_wheel(args.out)
        sim_meta = next(args.out.glob("specgate_sim-*.whl")).name.split("-")[1]
        wanted.append(f"specgate-sim[fixtures]=={sim_meta}")
    platform_args = [arg for plat in PLATFORMS for arg in ("--platform", plat)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--find-links", str(args.out),
         "--python-version", args.python_version, "--implementation", "cp", *platform_args,
         *(["--no-deps"] if args.no_deps else []),
         "-d", str(args.out), *wanted],
        check=True,
    )
    stamp_file.write_text(stamp + "\n")
    print(f"wheelhouse {args.out}: {len(list(args.out.glob('*.whl')))} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
