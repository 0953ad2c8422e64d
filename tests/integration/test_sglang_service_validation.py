"""sglang_service refuses bad input in its validate phase, naming the variable and the fix, before it
touches the host. Runs only the validate tag on localhost through ansible-runner (nothing after validate
can run, so a case that slipped through could not change this machine either)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import ansible_runner
import pytest

from integration.preflight_runner import CaseRuns, run_cases

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ENV_FACT = {
    "base_dir": "/nonexistent/specgate",
    "venv": "/nonexistent/specgate/venv",
    "python": "/nonexistent/specgate/venv/bin/python",
    "user": "sglang",
    "group": "sglang",
    "cache_dir": "/nonexistent/cache",
    "versions": {"sglang": "0.5.23"},
}
ENGINE_FACT = {"sglang_version": "0.5.23", "features": [], "renders_for": "0.5.23", "source": "index",
               "version_variable": "sglang_env_packages", "installed": True}
GOOD = {
    "sglang_service_model_path": "/models/target",
    "sglang_service_algorithm": "DFLASH",
    "sglang_service_drafter_path": "/models/drafter",
    "sglang_service_block_size": 8,
    "sglang_service_port": 31090,
}


def run_validate(extravars: dict, env_fact: dict | None = ENV_FACT) -> tuple[str, str, dict]:
    pre_tasks = []
    if env_fact is not None:
        pre_tasks.append(
            {
                "name": "Hand over the sglang_env fact",
                "tags": ["always"],
                "ansible.builtin.set_fact": {"specgate_sglang_env": env_fact, "specgate_engine": ENGINE_FACT},
            }
        )
    play = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "pre_tasks": pre_tasks,
            "roles": [{"role": "sglang_service"}],
        }
    ]
    with tempfile.TemporaryDirectory(prefix="sgsvc-validate-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            playbook=play,
            inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
            extravars=extravars,
            cmdline="--tags sglang_service_validate",
            envvars={
                "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
                "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
            },
            quiet=True,
        )
        stdout = result.stdout.read()
        stats = next((e["event_data"] for e in result.events if e["event"] == "playbook_on_stats"), {})
    return result.status, stdout, stats


CASES = {
    "no_env_fact": ({}, None, "specgate_sglang_env or specgate_engine is missing or incomplete"),
    "algorithm_not_offered": ({"sglang_service_algorithm": "EAGLE"}, ENV_FACT, "sglang_service_algorithm"),
    "short_api_key": ({"sglang_service_api_key": "abc"}, ENV_FACT, "sglang_service_api_key must be at least 8"),
    "api_key_in_extra_args": (
        {"sglang_service_extra_args": {"api-key": "sk-0123456789"}},
        ENV_FACT,
        "set sglang_service_api_key",
    ),
    "hf_token_in_extra_env": (
        {"sglang_service_extra_env": {"HF_TOKEN": "hf_x"}},
        ENV_FACT,
        "set\nsglang_service_hf_token",
    ),
    "zero_load_timeout": ({"sglang_service_load_timeout": 0}, ENV_FACT, "sglang_service_load_timeout"),
    "unsafe_label": ({"sglang_service_release_label": "../etc"}, ENV_FACT, "sglang_service_release_label"),
    "renderer_refuses": ({"sglang_service_block_size": 0}, ENV_FACT, "sglang_service_block_size"),
}


@pytest.fixture(scope="module")
def bad_input_runs(tmp_path_factory) -> CaseRuns:
    """Every case in one run of the validate phase, one local host per case (integration.preflight_runner.run_cases):
    the sglang_env facts handed over per host, as the stage before would set them."""
    play = [{"hosts": "all", "gather_facts": False,
             "pre_tasks": [{"name": "Hand over the sglang_env fact", "tags": ["always"],
                            "ansible.builtin.set_fact": {"specgate_sglang_env": "{{ case_env_fact }}",
                                                         "specgate_engine": ENGINE_FACT},
                            "when": "case_env_fact is not none"}],
             "roles": [{"role": "sglang_service"}]}]  # fmt: skip
    cases = {name: {**GOOD, **overrides, "case_env_fact": env_fact}
             for name, (overrides, env_fact, _message) in CASES.items()}  # fmt: skip
    return run_cases(tmp_path_factory.mktemp("sgsvc-validate"), play, cases, cmdline="--tags sglang_service_validate")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_fails_in_validate_naming_the_variable(case, bad_input_runs):
    _overrides, _env_fact, message = CASES[case]
    failures = bad_input_runs.failures(case)
    assert len(failures) == 1, bad_input_runs.stdout[-2000:]
    said = bad_input_runs.said(case)
    assert " ".join(message.split()) in said, said
    assert bad_input_runs.changed(case) == []
    assert "sk-0123456789" not in bad_input_runs.stdout


def test_good_input_passes_validate():
    status, stdout, _stats = run_validate(GOOD)
    assert status == "successful", stdout[-3000:]
