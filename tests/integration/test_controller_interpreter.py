"""The controller's planning modules (sglang_env_plan, spec_sweep_state) run on the playbook's own Python, which has
what they import (packaging, matplotlib: requirements/deploy.txt), even when the inventory lists localhost with an
interpreter of its own, as inventories that set ansible_python_interpreter for every host do."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import ansible_runner
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
GRID = [{"name": "bs8", "axes": {"algorithm": ["DFLASH"], "block_size": [8]}}]


def test_the_planning_modules_ignore_an_explicit_localhosts_interpreter(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        "planner": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        # The interpreter an inventory gives every host, localhost included: not the controller's.
        "localhost": {"ansible_connection": "local", "ansible_python_interpreter": "/nonexistent/python3"},
    }}}))  # fmt: skip
    play = [{"hosts": "planner", "gather_facts": False, "tasks": [
        {"name": "Plan the venv", "ansible.builtin.include_role": {"name": "sglang_env", "tasks_from": "validate"}},
        {"name": "Plan the sweep", "ansible.builtin.include_role": {"name": "spec_sweep", "tasks_from": "validate"}},
    ]}]  # fmt: skip
    (tmp_path / "private").mkdir()
    run = ansible_runner.run(
        private_data_dir=str(tmp_path / "private"), playbook=play, inventory=str(inventory),
        extravars={"spec_sweep_grid": GRID, "spec_sweep_reports_dir": str(tmp_path / "reports"),
                   "sglang_env_packages": ["sglang==0.5.23"]},
        envvars={"ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
                 "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")},
        quiet=True,
    )
    ran = {e["event_data"]["task_action"] for e in run.events if e["event"] == "runner_on_ok"}
    failed = [e["event_data"]["res"].get("msg") for e in run.events if e["event"] == "runner_on_failed"]
    assert run.status == "successful", failed
    assert {"sglang_env_plan", "spec_sweep_state"} <= ran
