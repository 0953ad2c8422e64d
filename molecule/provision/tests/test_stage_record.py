"""A re-run of a provisioned host checks cuda_toolkit and sglang_env in one host call each and skips their tasks;
drift the record does not vouch for (a hand-edited env file, a loosened directory mode) sends that stage down its
full path, which repairs it, and the run after that is a no-op again. Runs converge.yml as molecule does."""

from __future__ import annotations

import os
from pathlib import Path

import ansible_runner

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
ENV_FILE = "/opt/specgate/cuda/cuda.env"
CACHE_DIR = "/var/cache/specgate"
CUDA_INSTALL = "Install the host C++ compiler nvcc drives, and venv support"
VENV_INSTALL = "Install the pinned packages into the venv (installed pins are left alone)"
# The includes that hold them: a converged stage skips each as one task, and no task inside one starts.
CUDA_INSTALL_STEP = "Install nvcc, runtime, CCCL and curand headers from the chosen source"
VENV_INSTALL_STEP = "Install the pinned SGLang stack into the venv"

testinfra_hosts = ["podman://specgate-provision"]


def converge(tmp_path: Path) -> ansible_runner.Runner:
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = ansible_runner.run(
        private_data_dir=str(tmp_path), project_dir=str(PROJECT), playbook=str(SCENARIO / "converge.yml"),
        inventory=str(EPHEMERAL / "inventory"), envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")}, quiet=True,
    )  # fmt: skip
    failures = [e["event_data"]["res"].get("msg") for e in run.events if e["event"] == "runner_on_failed"]
    assert run.status == "successful", failures
    return run


def tasks(run: ansible_runner.Runner, event: str, changed: bool | None = None) -> set[str]:
    return {e["event_data"]["task"] for e in run.events if e["event"] == event
            and (changed is None or bool(e["event_data"]["res"].get("changed")) == changed)}  # fmt: skip


def stage_result(run: ansible_runner.Runner, role: str) -> dict:
    (result,) = [e["event_data"]["res"] for e in run.events if e["event"] == "runner_on_ok"
                 and e["event_data"].get("role") == role and e["event_data"]["task"].startswith("Ask whether")]
    return result


def test_a_rerun_checks_each_stage_in_one_call_and_skips_its_tasks(tmp_path):
    run = converge(tmp_path)
    assert run.stats["changed"] == {}
    assert stage_result(run, "cuda_toolkit")["converged"] is True
    assert stage_result(run, "sglang_env")["converged"] is True
    assert {CUDA_INSTALL_STEP, VENV_INSTALL_STEP} <= tasks(run, "runner_on_skipped")
    started = tasks(run, "runner_on_ok") | tasks(run, "runner_on_skipped")
    assert not {CUDA_INSTALL, VENV_INSTALL} & started


def test_drift_sends_its_stage_down_the_full_path_which_repairs_it(host, tmp_path):
    wanted = host.file(ENV_FILE).content_string
    host.run_expect([0], f"echo 'CUDA_HOME=/elsewhere' >> {ENV_FILE} && chmod 0777 {CACHE_DIR}")

    run = converge(tmp_path / "drifted")
    cuda, venv = stage_result(run, "cuda_toolkit"), stage_result(run, "sglang_env")
    assert cuda["differences"] == [f"{ENV_FILE} differs from what the stage writes"]
    assert venv["differences"] == [f"{CACHE_DIR} has mode 0777, not 0750"]
    repaired = tasks(run, "runner_on_ok", changed=True)
    assert "Render the CUDA environment the service and FlashInfer's JIT load" in repaired
    assert "Create the JIT and kernel cache directory the service writes" in repaired
    assert host.file(ENV_FILE).content_string == wanted
    assert host.file(CACHE_DIR).mode == 0o750

    again = converge(tmp_path / "again")
    assert again.stats["changed"] == {}
    assert stage_result(again, "cuda_toolkit")["converged"] is True
