"""What preflight, cuda_toolkit and sglang_env left on the provision host, checked from outside."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
CUDA_HOME = "/opt/specgate/cuda/home"
CUBIN = "/opt/specgate/cuda/probe/probe-sm_120a.cubin"
VENV = "/opt/specgate/venv"
PATCH = PROJECT / "molecule" / "provision" / "files" / "sim-provision-marker.patch"

testinfra_hosts = ["podman://specgate-provision"]


def cubin_sm(header: bytes) -> int:
    assert header[:4] == b"\x7fELF", "the probe output is not an ELF file"
    assert struct.unpack_from("<H", header, 18)[0] == 190, "the probe output is not a CUDA (EM_CUDA) binary"
    return (struct.unpack_from("<I", header, 48)[0] >> 8) & 0xFF


def test_probe_was_compiled_for_sm120(host):
    probe = host.file(CUBIN)
    assert probe.is_file
    assert probe.user == "root"
    assert cubin_sm(probe.content[:64]) == 120


def test_nvcc_is_the_pinned_cuda_13_0(host):
    out = host.check_output(f"{CUDA_HOME}/bin/nvcc --version")
    assert "release 13.0, V13.0.88" in out


def test_curand_headers_are_in_the_toolkit_include_dir(host):
    assert host.file(f"{CUDA_HOME}/include/curand_kernel.h").is_file
    assert host.file(f"{CUDA_HOME}/include/curand.h").is_file


def test_probe_recompiles_from_the_env_file_alone(host):
    """The env file is enough for a JIT: nvcc from PATH, arch from FLASHINFER_CUDA_ARCH_LIST, curand on CPATH."""
    cmd = (
        "set -a; . /opt/specgate/cuda/cuda.env; set +a; "
        "nvcc -arch=sm_$(echo $FLASHINFER_CUDA_ARCH_LIST | tr -d .) -cubin -o /tmp/reprobe.cubin "
        "/opt/specgate/cuda/probe/probe.cu && echo ok"
    )
    assert host.run(f"bash -c '{cmd}'").stdout.strip() == "ok"
    assert cubin_sm(host.file("/tmp/reprobe.cubin").content[:64]) == 120


def test_env_file_names_home_paths_and_arch_lists(host):
    env = host.file("/opt/specgate/cuda/cuda.env")
    assert (env.user, env.group, env.mode) == ("root", "root", 0o644)
    lines = dict(line.split("=", 1) for line in env.content_string.splitlines() if line and not line.startswith("#"))
    assert lines["CUDA_HOME"] == CUDA_HOME
    assert lines["PATH"].startswith(f"{CUDA_HOME}/bin:")
    assert lines["CPATH"] == f"{CUDA_HOME}/include"
    assert lines["LD_LIBRARY_PATH"] == f"{CUDA_HOME}/lib"
    assert lines["FLASHINFER_CUDA_ARCH_LIST"] == "12.0a"
    assert lines["TORCH_CUDA_ARCH_LIST"] == "12.0a"


def test_service_user_is_a_system_account_without_login(host):
    user = host.user("sglang")
    assert user.exists
    assert user.group == "sglang"
    assert user.shell == "/usr/sbin/nologin"
    assert user.uid < 1000


@pytest.mark.parametrize(
    ("path", "owner", "group", "mode"),
    [
        ("/opt/specgate", "root", "sglang", 0o755),
        ("/var/cache/specgate", "sglang", "sglang", 0o750),
        ("/opt/specgate/cuda", "root", "root", 0o755),
    ],
)
def test_directories_have_their_owners_and_modes(host, path, owner, group, mode):
    directory = host.file(path)
    assert directory.is_directory
    assert (directory.user, directory.group, directory.mode) == (owner, group, mode)


def test_venv_has_the_pinned_packages_on_python_3_11(host):
    script = (
        "import importlib.metadata as m, json, sys; "
        "print(json.dumps({'python': sys.version.split()[0], "
        "'sim': m.version('specgate-sim'), 'hub': m.version('huggingface_hub')}))"
    )
    versions = json.loads(host.check_output(f'{VENV}/bin/python -c "{script}"'))
    assert versions["python"].startswith("3.11.")
    assert versions["sim"] == "0.1.0"
    assert versions["hub"] == "2.4.0"


def test_patch_is_applied_and_its_checksum_recorded(host):
    site = host.check_output(f"{VENV}/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'")
    marker = host.file(f"{site}/specgate_sim/_provision_marker.py")
    assert 'PATCHED_BY = "specgate sglang_env, molecule provision scenario"' in marker.content_string
    state = json.loads(host.file(f"{VENV}/.specgate-patches/state.json").content_string)
    assert state["patches"]["sim-provision-marker.patch"]["sha256"] == hashlib.sha256(PATCH.read_bytes()).hexdigest()
