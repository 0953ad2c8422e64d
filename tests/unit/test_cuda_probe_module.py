"""cuda_probe module: compiles once, and refuses a wrong nvcc, a failed compile and a cubin for another SM."""

from __future__ import annotations

import json

import cuda_probe as module  # library/cuda_probe.py (tests/conftest.py puts library/ on sys.path)
import pytest
from ansible.module_utils.testing import patch_module_args
from test_cuda_toolkit import CUBIN_SM90A, CUBIN_SM120A

pytestmark = pytest.mark.host

FAKE_NVCC = """#!/bin/sh
# Stands in for nvcc: a version banner, and a "cubin" carrying a recorded header.
if [ "$1" = "--version" ]; then
  echo "Cuda compilation tools, release {release}, V{release}.88"; exit 0
fi
echo "$@" >> "{calls}"
{compile}
"""


def make_nvcc(tmp_path, release="13.0", header=CUBIN_SM120A, fail=False):
    (tmp_path / "header.bin").write_bytes(header + bytes(64))
    while_compiling = (
        'echo "probe.cu(4): fatal error: curand_kernel.h: No such file or directory" >&2; exit 1'
        if fail
        else f'out=$(echo "$@" | sed "s/.*-o \\([^ ]*\\).*/\\1/"); cp "{tmp_path}/header.bin" "$out"'
    )
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(release=release, calls=tmp_path / "calls.log", compile=while_compiling))
    nvcc.chmod(0o755)
    (tmp_path / "probe.cu").write_text("#include <curand_kernel.h>\n")
    return nvcc


def run_probe(tmp_path, capsys, check_mode=False):
    args = {
        "nvcc": str(tmp_path / "nvcc"),
        "source": str(tmp_path / "probe.cu"),
        "output": str(tmp_path / "probe-sm_120a.cubin"),
        "nvcc_arch": "sm_120a",
        "sm": 120,
        "expected_version": "13.0",
        "_ansible_check_mode": check_mode,
    }
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def compile_calls(tmp_path):
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_probe_compiles_for_the_arch_then_is_left_alone(tmp_path, capsys):
    make_nvcc(tmp_path)
    first = run_probe(tmp_path, capsys)
    assert (first["changed"], first["compiled"], first["cubin_sm"]) == (True, True, 120)
    assert compile_calls(tmp_path) == [f"-arch=sm_120a -cubin -o {tmp_path}/probe-sm_120a.cubin {tmp_path}/probe.cu"]
    second = run_probe(tmp_path, capsys)
    assert second["changed"] is False
    assert len(compile_calls(tmp_path)) == 1


def test_check_mode_reports_the_compile_without_running_it(tmp_path, capsys):
    make_nvcc(tmp_path)
    result = run_probe(tmp_path, capsys, check_mode=True)
    assert result["changed"] is True
    assert compile_calls(tmp_path) == []


def test_nvcc_of_another_release_is_refused_naming_cuda_version(tmp_path, capsys):
    make_nvcc(tmp_path, release="12.8")
    result = run_probe(tmp_path, capsys)
    assert result["failed"] is True
    assert "is CUDA 12.8, but cuda_toolkit_version is 13.0" in result["msg"]
    assert compile_calls(tmp_path) == []


def test_failed_compile_reports_nvcc_output_and_the_fix(tmp_path, capsys):
    make_nvcc(tmp_path, fail=True)
    result = run_probe(tmp_path, capsys)
    assert result["failed"] is True
    assert "curand_kernel.h: No such file" in result["msg"]
    assert "install the curand headers" in result["msg"]


def test_cubin_for_another_sm_is_refused(tmp_path, capsys):
    make_nvcc(tmp_path, header=CUBIN_SM90A)
    result = run_probe(tmp_path, capsys)
    assert result["failed"] is True
    assert "SM 90, expected SM 120" in result["msg"]
