"""Drive the preflight role on localhost through ansible-runner, with nvidia-smi faked from fixture files."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ansible_runner
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
GPU_FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "gpu"

FAKE_NVIDIA_SMI = """#!/bin/sh
# Answers the nvidia-smi calls gpu_facts makes from the captured outputs in {fixtures}.
d='{fixtures}'
case "$*" in
  --query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version*) cat "$d/query_gpu.csv" ;;
  "topo -m") cat "$d/topo_m.txt" ;;
  "") cat "$d/smi.txt" ;;
  *) echo "fake nvidia-smi: no fixture for: $*" >&2; exit 2 ;;
esac
"""

NO_DEVICE_NVIDIA_SMI = """#!/bin/sh
echo "No devices were found"
exit 6
"""


def fake_nvidia_smi(directory: Path, box: str | None) -> Path:
    """An executable nvidia-smi that prints a box's fixtures, or one that finds no device (box None)."""
    path = directory / "nvidia-smi"
    text = NO_DEVICE_NVIDIA_SMI if box is None else FAKE_NVIDIA_SMI.format(fixtures=GPU_FIXTURES / box)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


@dataclass
class RoleRun:
    status: str
    events: list[dict[str, Any]]

    def failed_tasks(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            (event["event_data"].get("task", ""), event["event_data"].get("res", {}))
            for event in self.events
            if event.get("event") == "runner_on_failed"
        ]

    def changed_tasks(self) -> list[str]:
        return [
            event["event_data"].get("task", "")
            for event in self.events
            if event.get("event") == "runner_on_ok" and event["event_data"].get("res", {}).get("changed")
        ]

    def fact(self, name: str) -> Any:
        for event in self.events:
            if event.get("event") == "runner_on_ok":
                facts = event["event_data"].get("res", {}).get("ansible_facts", {})
                if name in facts:
                    return facts[name]
        raise KeyError(f"no task set the fact {name}")


def _local_envvars(tmp_path: Path) -> dict[str, str]:
    """The environment of a play run on this machine: the venv's Ansible, the project's ansible.cfg, a private temp."""
    return {"PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"), "ANSIBLE_FACT_CACHING": "memory"}  # fmt: skip


def run_play(tmp_path: Path, play: list[dict[str, Any]], extravars: dict[str, Any], cmdline: str = "",
             private_name: str = "runner") -> RoleRun:
    """One play on localhost (its hosts: localhost, gather_facts off), with extravars; the project's ansible.cfg
    applies. cmdline adds ansible-playbook options."""
    private = tmp_path / private_name
    (private / "project").mkdir(parents=True)
    (private / "inventory").mkdir()
    (private / "inventory" / "hosts").write_text(
        f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n", encoding="utf-8"
    )
    (private / "project" / "play.yml").write_text(json.dumps(play), encoding="utf-8")
    (private / "env").mkdir()
    (private / "env" / "extravars").write_text(json.dumps(extravars), encoding="utf-8")
    # ansible-runner looks ansible-playbook up on this process's PATH: the venv's, not the system's.
    if str(VENV_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    result = ansible_runner.run(
        private_data_dir=str(private),
        playbook="play.yml",
        cmdline=cmdline or None,
        quiet=True,
        envvars=_local_envvars(tmp_path),
    )
    return RoleRun(status=result.status, events=list(result.events))


def run_role(tmp_path: Path, role: str, role_vars: dict[str, Any], cmdline: str = "") -> RoleRun:
    """One play on localhost that runs the role with role_vars; the project's ansible.cfg applies.

    cmdline adds ansible-playbook options, e.g. "--check --tags cuda_validate" so a role that installs
    things can be driven into its refusals on the test machine without any chance of changing it.
    """
    play = [{"name": f"{role} under test", "hosts": "localhost", "gather_facts": False, "roles": [role]}]
    return run_play(tmp_path, play, role_vars, cmdline)


def run_entries(tmp_path: Path, role: str, entries: list[str], extravars: dict[str, Any],
                private_name: str = "runner") -> RoleRun:
    """One play on localhost running the role's entry points (tasks_from) in order, as a playbook orders them."""
    tasks = [{"name": f"{role} {entry}", "ansible.builtin.include_role": {"name": role, "tasks_from": entry}}
             for entry in entries]
    play = [{"name": f"{role} entry points", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    return run_play(tmp_path, play, extravars, private_name=private_name)


def run_on_ct200(tmp_path: Path, extravars: dict[str, Any], playbook: str = "deploy.yml",
                 cmdline: str | None = None, envvars: dict[str, str] | None = None) -> ansible_runner.Runner:
    """A project playbook as users run it (`-l ct200`, the fleet inventory), on this machine over the local
    connection with ct200's nvidia-smi faked: for refusals that must come before any stage changes the host."""
    return as_ct200(tmp_path, playbook, PROJECT_ROOT / "inventory" / "hosts.yml", extravars, limit="ct200",
                     cmdline=cmdline, envvars=envvars)


def as_ct200(tmp_path: Path, playbook: str, inventory: Path, extravars: dict[str, Any], *, limit: str | None = None,
              cmdline: str | None = None, envvars: dict[str, str] | None = None) -> ansible_runner.Runner:  # fmt: skip
    """A project playbook on this machine over the local connection, ct200's nvidia-smi faked, no disk floor.
    ``envvars``: Ansible settings on top of the project's ansible.cfg."""
    smi = fake_nvidia_smi(tmp_path, "ct200_sm120_pcie")
    private = tmp_path / "runner"
    private.mkdir()
    return ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(PROJECT_ROOT),
        playbook=str(PROJECT_ROOT / playbook),
        inventory=str(inventory),
        limit=limit,
        extravars={
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "preflight_nvidia_smi": str(smi),
            "preflight_min_free_gib": {"/": 0},
            **extravars,
        },
        envvars={"ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"), **(envvars or {})},
        cmdline=cmdline,
        quiet=True,
    )


def validate_on_ct200_with_local_models(tmp_path: Path, settings: dict[str, Any], *, target_present: bool = True,
                                        inventory: Path | None = None) -> ansible_runner.Runner:  # fmt: skip
    """deploy.yml on ct200 in check mode running only what is tagged always (the rollout's plan, preflight's facts
    and every stage's read-only entry point), with the target and drafter as local fixture directories (8 attention
    heads, 4096 positions; no hub). ``target_present=False`` points the target at a directory that is not there;
    ``inventory``: another inventory whose every host is this machine (a router host beside ct200), run whole."""
    from peer.resolver_cases import write_model_dirs  # the peer tests' fixture models (specgate_sim)

    models = tmp_path / "models"
    models.mkdir()
    dirs = write_model_dirs(models)
    local = {"model_weights_target_repo": "",
             "model_weights_target_local_path": dirs["target"] if target_present else str(models / "not-yet-staged"),
             "model_weights_drafter": None, "model_weights_drafter_repo": "",
             "model_weights_drafter_local_path": dirs["drafter"]}  # fmt: skip
    cmdline = "--check --tags specgate-validate-only"
    if inventory is not None:
        return as_ct200(tmp_path, "deploy.yml", inventory, {**local, **settings}, cmdline=cmdline)
    return run_on_ct200(tmp_path, {**local, **settings}, cmdline=cmdline)


def run_on_copies_of_ct200(tmp_path: Path, cases: dict[str, dict[str, Any]], playbook: str = "deploy.yml",
                           cmdline: str | None = None) -> ansible_runner.Runner:
    """A project playbook over copies of ct200, one per case, in one run: each copy is ct200 as the fleet inventory
    states it (its groups, group_vars and host_vars) with the case's settings in its own host_vars, as a user would set
    them; all in one batch (fleet_rollout_serial 100 %), so one copy's refusal never stops another's run. Refusals that
    come before any stage changes the host are per host, so each copy's events are what ``-l ct200`` would show."""
    inventory = tmp_path / "inventory"
    shutil.copytree(PROJECT_ROOT / "inventory" / "group_vars", inventory / "group_vars")
    (inventory / "host_vars").mkdir()
    ct200 = yaml.safe_load((PROJECT_ROOT / "inventory" / "host_vars" / "ct200.yml").read_text()) or {}
    fleet = yaml.safe_load((PROJECT_ROOT / "inventory" / "hosts.yml").read_text())
    boxes = fleet["all"]["children"]["sglang_hosts"]["children"]
    group = next(name for name, members in boxes.items() if "ct200" in (members.get("hosts") or {}))
    for name, settings in cases.items():
        (inventory / "host_vars" / f"{name}.yml").write_text(yaml.safe_dump({**ct200, **settings}))
    hosts = {"all": {"children": {"sglang_hosts": {"children": {group: {"hosts": {
        name: {"ansible_host": "ct200"} for name in cases}}}}}}}  # fmt: skip
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return as_ct200(tmp_path, playbook, inventory / "hosts.yml", {"fleet_rollout_serial": ["100%"]}, cmdline=cmdline)


# What a refused run may have done before its refusal: the rollout's plan, preflight, and each stage's read-only
# checks (its validate entry point and the task files it includes, the argument_specs checks of those entry points).
READ_ONLY_TASK_FILES = frozenset({"validate.yml", "values.yml", "deployment.yml", "target_limits.yml", "topology.yml"})
READ_ONLY_ENTRY_POINTS = ("validate", "plan", "target_limits")


def beyond_validation(events: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(role, task file) of every task a run's ``events`` ran that is not one of the read-only checks every stage runs
    before any stage changes the host: empty when a refusal came before anything else."""
    spec_checks = tuple(f"Validating arguments against arg spec '{entry}'" for entry in READ_ONLY_ENTRY_POINTS)
    ran = {(e["event_data"].get("role"), e["event_data"].get("task_path", "").split(":")[0].rsplit("/", 1)[-1],
            e["event_data"].get("task", "")) for e in events if e["event"] == "runner_on_ok"}  # fmt: skip
    return {(role, path) for role, path, task in ran
            if role not in ("preflight", None) and path not in READ_ONLY_TASK_FILES
            and (role, path) != ("fleet_rollout", "plan.yml") and not task.startswith(spec_checks)}  # fmt: skip


@dataclass
class CaseRuns:
    """One playbook run over one host per case: each case's events, and the run's whole output."""

    stdout: str
    events: dict[str, list[dict[str, Any]]]

    def failures(self, case: str) -> list[dict[str, Any]]:
        return [e["event_data"] for e in self.events[case] if e["event"] == "runner_on_failed"]

    def said(self, case: str) -> str:
        """What the run printed of the case's failures (the task's message as Ansible shows it), whitespace folded."""
        printed = []
        for event in self.events[case]:
            if event["event"] in ("runner_on_failed", "runner_item_on_failed"):
                res = event["event_data"].get("res", {})
                printed += [event.get("stdout", ""), str(res.get("msg", ""))]
                printed += [str(item.get("msg", "")) for item in res.get("results", []) if item.get("failed")]
        return " ".join(" ".join(printed).split())

    def changed(self, case: str) -> list[str]:
        return [e["event_data"].get("task", "") for e in self.events[case]
                if e["event"] == "runner_on_ok" and e["event_data"].get("res", {}).get("changed")]  # fmt: skip


def run_cases(tmp_path: Path, play: list[dict[str, Any]], cases: dict[str, dict[str, Any]],
              cmdline: str | None = None) -> CaseRuns:  # fmt: skip
    """``play`` (its hosts: all) once over one local host per case, the case's variables its host variables (as an
    inventory states them): many refusal cases for the cost of one ansible-playbook run. A host's refusal never stops
    another's (no play here sets any_errors_fatal or a failure budget)."""
    private = tmp_path / "cases"
    (private / "project").mkdir(parents=True)
    (private / "inventory").mkdir()
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"hosts": {name: {**local, **variables} for name, variables in cases.items()}}}
    (private / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    (private / "project" / "play.yml").write_text(json.dumps(play), encoding="utf-8")
    result = ansible_runner.run(
        private_data_dir=str(private), playbook="play.yml", cmdline=cmdline, quiet=True,
        envvars=_local_envvars(tmp_path),
    )  # fmt: skip
    events = {name: [e for e in result.events if e.get("event_data", {}).get("host") == name] for name in cases}
    return CaseRuns(result.stdout.read(), events)
