"""The modules as Ansible runs them: check mode validates without touching the server; bad input names the variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def ansible(module: str, args: dict, *extra: str) -> dict:
    """ansible localhost -m <module> with JSON args; the one host's result."""
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
    }
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-m", module,
         "-a", json.dumps(args), "-e", f"ansible_python_interpreter={sys.executable}", *extra],
        cwd=PROJECT, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    # The profile_tasks callback (ansible.cfg) prints timing lines around the JSON document.
    out, _end = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index("{") :])
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def test_spec_bench_check_mode_validates_and_sends_nothing():
    # Nothing listens on port 9: in check mode the module must not try.
    res = ansible("spec_bench", {"port": 9, "api_key": "s3cret"}, "--check")
    assert not res.get("failed"), res
    assert res["changed"] is False
    assert "nothing sent" in res["msg"]
    assert "s3cret" not in json.dumps(res)


def test_spec_bench_refuses_an_unknown_set_naming_the_variable_even_in_check_mode():
    res = ansible("spec_bench", {"port": 9, "sets": ["code", "poetry"]}, "--check")
    assert res["failed"]
    assert "spec_gate_bench_sets" in res["msg"]
    assert "poetry" in res["msg"]


def test_spec_bench_reports_an_unreachable_server():
    res = ansible("spec_bench", {"port": 9, "eval": False, "warmup_requests": 0})
    assert res["failed"]
    assert "cannot reach the server at http://127.0.0.1:9" in res["msg"]


def test_spec_gate_decide_runs_in_check_mode_and_returns_the_verdict():
    run = {
        "cells": [],
        "sets": {"code": {"accept_length_request": 4.2, "accept_length_server": 4.1}},
        "eval": {"problems": 24, "passed": 24, "pass_rate": 1.0},
    }
    args = {"runs": [run, run], "release": "r1",
            "thresholds": {"spec_gate_min_accept_length": "3.0", "min_correctness": 0.9}}  # fmt: skip
    res = ansible("spec_gate_decide", args, "--check")
    assert not res.get("failed"), res
    assert (res["phase"], res["decision"], res["more_runs"], res["changed"]) == ("Successful", "promote", False, False)
    assert res["gate"]["schema"] == "specgate.gate/v1"
    # Stored by short name, as a settled release is compared on them (and as older gate.json files hold them).
    assert res["gate"]["thresholds"]["min_accept_length"] == "3.0"
    assert res["gate"]["thresholds"]["min_correctness"] == 0.9
    assert res["gate"]["thresholds"]["max_regression"] is None
