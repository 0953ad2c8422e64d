"""gpu_facts module: a GPU-less host is a fact, not an error; a broken nvidia-smi is an error with its output."""

from __future__ import annotations

import json

import gpu_facts as module  # library/gpu_facts.py (tests/conftest.py puts library/ on sys.path)
import pytest
from ansible.module_utils.testing import patch_module_args

pytestmark = pytest.mark.host


def fake_nvidia_smi(tmp_path, script):
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def run_facts(tmp_path, capsys, nvidia_smi):
    with (
        patch_module_args({"nvidia_smi": str(nvidia_smi), "paths": [str(tmp_path / "models")]}),
        pytest.raises(SystemExit),
    ):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_missing_nvidia_smi_gives_a_gpu_less_fact_and_host_facts(tmp_path, capsys):
    result = run_facts(tmp_path, capsys, tmp_path / "no-such-nvidia-smi")
    assert result["specgate_gpu"]["has_gpus"] is False
    assert "not found" in result["no_gpu_reason"]
    assert result["host"]["disk"][0]["measured_at"] == str(tmp_path)
    assert result["host"]["mem_total_mib"] > 0


def test_no_devices_found_is_a_gpu_less_host(tmp_path, capsys):
    result = run_facts(tmp_path, capsys, fake_nvidia_smi(tmp_path, 'echo "No devices were found"; exit 6\n'))
    assert result["specgate_gpu"]["has_gpus"] is False
    assert result["no_gpu_reason"] == "No devices were found"


def test_unexpected_nvidia_smi_failure_is_an_error_with_its_output(tmp_path, capsys):
    result = run_facts(tmp_path, capsys, fake_nvidia_smi(tmp_path, 'echo "Unknown Error" >&2; exit 255\n'))
    assert result["failed"] is True
    assert "rc 255" in result["msg"]
    assert "Unknown Error" in result["msg"]


def test_unparseable_query_output_is_an_error(tmp_path, capsys):
    result = run_facts(tmp_path, capsys, fake_nvidia_smi(tmp_path, 'echo "0, NVIDIA H200"\n'))
    assert result["failed"] is True
    assert result["msg"].startswith("could not parse nvidia-smi output")


def test_driver_not_loaded_exit_code_is_a_gpu_less_host(tmp_path, capsys):
    # nvidia-smi exits 9 when the NVIDIA driver is not loaded, whatever it prints.
    result = run_facts(tmp_path, capsys, fake_nvidia_smi(tmp_path, "exit 9\n"))
    assert result["specgate_gpu"]["has_gpus"] is False
