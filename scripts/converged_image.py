#!/usr/bin/env python3
"""The converged test host, built once and reused: a podman image of a demo host that deploy.yml has provisioned
(CUDA stand-in, the engine's venv, the target and drafter weights, the local hub installed), for the molecule
scenarios whose subject is not provisioning. They start from it instead of converging a bare host again.

The image is keyed by the inputs that built it: every file under the paths in INPUTS (roles, modules, playbooks, the
demo inventory, the sim, the pins...) and the base image's id. A key that differs from the image's label builds a new
image, so a stale snapshot is never reused; an unchanged key reuses the one already built (by this run or an earlier
one). Scenarios that prove convergence from bare (default, debian13, provision, controller) never use it.

    scripts/converged_image.py            build the image when missing or stale, else say it is up to date
    scripts/converged_image.py --key      print the key the current inputs give, build nothing

Concurrent callers (scripts/test's lanes) take turns on a lock; the second finds the image built.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "localhost/specgate-converged"
TAG = f"{IMAGE}:latest"
BASE_IMAGE = "localhost/specgate-debian12:latest"
LABEL = "specgate.converged.key"
BUILD_CONTAINER = "specgate-converged-build"
# What the converged host is made from. A change to any file under these changes the key.
INPUTS = (
    "ansible.cfg",
    "deploy.yml",
    "requirements.yml",
    "action_plugins",
    "filter_plugins",
    "inventory/demo",
    "library",
    "module_utils",
    "local_collections",
    "molecule/shared/converged.yml",
    "playbooks",
    "requirements",
    "roles",
    "scripts/build_wheelhouse.py",
    "scripts/converged_image.py",
    "sim",
    "templates",
)
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", "build", "tests"}
SKIPPED_SUFFIXES = {".pyc", ".pyo"}
# The provisioning stages: everything a consumer would otherwise converge from bare before its own subject.
STAGES = ("preflight", "cuda_toolkit", "sglang_env", "model_weights")
# The build's own ports (CONTRIBUTING.md's table), apart from every scenario's.
HUB_PORT = 37080


def _counted(relative: Path) -> bool:
    return not SKIPPED_PARTS & set(relative.parts) and relative.suffix not in SKIPPED_SUFFIXES


def input_files(root: Path, inputs: Iterable[str] = INPUTS) -> list[Path]:
    """Every file the key covers, sorted; a missing input path is an error (the list went stale)."""
    files: list[Path] = []
    for name in inputs:
        path = root / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in path.rglob("*") if p.is_file() and _counted(p.relative_to(root)))
        else:
            raise FileNotFoundError(f"{name}: an input of the converged image that does not exist (INPUTS)")
    return sorted(files)


def inputs_key(root: Path, base_image_id: str, inputs: Iterable[str] = INPUTS) -> str:
    """sha256 over the base image's id and each input file's path and content (not its mtime)."""
    digest = hashlib.sha256(f"base {base_image_id}\n".encode())
    for path in input_files(root, inputs):
        digest.update(f"{path.relative_to(root)}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def needs_build(image_label: str | None, key: str) -> bool:
    """An image is reused only when it exists and was built from exactly these inputs."""
    return image_label != key


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check)


def image_label(image: str) -> str | None:
    """The key label of a local image, or None when there is no such image."""
    done = _podman("image", "inspect", "--format", f'{{{{ index .Labels "{LABEL}" }}}}', image, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def base_image_id() -> str:
    done = _podman("image", "inspect", "--format", "{{.Id}}", BASE_IMAGE, check=False)
    if done.returncode != 0:
        sys.exit(f"converged image: the base image {BASE_IMAGE} is missing; run scripts/bootstrap first")
    return done.stdout.strip()


def _say(message: str, started: float) -> None:
    print(f"converged image: [{time.monotonic() - started:4.0f}s] {message}", flush=True)


def _playbook(args: Sequence[str], inventory: Path, started: float, what: str) -> None:
    _say(what, started)
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")}
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-20000:])
        sys.stderr.write(done.stderr[-5000:])
        sys.exit(f"converged image: {what} failed (rc {done.returncode}); the stale image, if any, is kept unused")


def build(key: str) -> None:
    started = time.monotonic()
    _podman("rm", "--force", BUILD_CONTAINER, check=False)
    with tempfile.TemporaryDirectory(prefix="specgate-converged-") as scratch:
        inventory = Path(scratch) / "inventory"
        inventory.mkdir()
        # The demo inventory's group_vars beside a host of our own, as molecule links them for its scenarios.
        (inventory / "group_vars").symlink_to(ROOT / "inventory" / "demo" / "group_vars")
        (inventory / "hosts.yml").write_text(json.dumps({"all": {"children": {"sglang_hosts": {"hosts": {
            BUILD_CONTAINER: {"ansible_connection": "containers.podman.podman"}}}}}}))
        extra = json.dumps({"demo_host_hub_port": HUB_PORT, "demo_host_manage_container": False,
                            "converged_container": BUILD_CONTAINER, "converged_image": BASE_IMAGE})
        try:
            _playbook([str(ROOT / "molecule" / "shared" / "converged.yml"), "-e", extra], inventory, started,
                      f"starting {BUILD_CONTAINER} from {BASE_IMAGE} and shipping it the demo's wheelhouses and hub")
            _playbook([str(ROOT / "deploy.yml"), "--tags", ",".join(STAGES), "-e", extra], inventory, started,
                      f"provisioning it with deploy.yml --tags {','.join(STAGES)}")
            _say("stopping the hub (each consumer runs its own on its own port) and the container", started)
            _podman("exec", BUILD_CONTAINER, "systemctl", "disable", "--now", "specgate-demo-hub")
            _podman("stop", "--time", "30", BUILD_CONTAINER)
            _say(f"committing {IMAGE}:{key[:16]}", started)
            _podman("commit", "--quiet", "--change", f"LABEL {LABEL}={key}", BUILD_CONTAINER, f"{IMAGE}:{key[:16]}")
            _podman("tag", f"{IMAGE}:{key[:16]}", TAG)
        finally:
            _podman("rm", "--force", BUILD_CONTAINER, check=False)
    # Older snapshots are never reused (their key is not this one): drop them so they do not fill the disk.
    listed = _podman("images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE, check=False).stdout.split()
    for old in listed:
        if old not in (TAG, f"{IMAGE}:{key[:16]}"):
            _podman("rmi", "--force", old, check=False)
    _say(f"built {TAG} for inputs {key[:16]}", started)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--key", action="store_true", help="print the key of the current inputs and exit")
    args = parser.parse_args(argv)
    if args.key:
        print(inputs_key(ROOT, base_image_id()))
        return 0
    lock_path = ROOT / ".cache" / "converged-image.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the build fails
        key = inputs_key(ROOT, base_image_id())
        if not needs_build(image_label(TAG), key):
            print(f"converged image: {TAG} is up to date (inputs {key[:16]})")
            return 0
        build(key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
