"""The project's controller plugins are loaded once per run, not once per task. The filter and test plugins are loaded
once in the controller's main process, also when ansible-runner drives the playbook (as the tests and Python callers
do): ansible-runner replaces the callback path with its own, so the preload callback lives in the project's collection
(local_collections/ansible_collections/specgate/project), a path it does not touch. The project_dir vars plugin is
one instance for the whole run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ansible_runner

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Use one of the project's filters in a forked worker
      ansible.builtin.debug:
        msg: "{{ {'sglang_service_tp_size': {'integer': true, 'min': 1}} | specgate_range_refusal([2]) }}"
"""


def test_the_preload_callback_runs_under_ansible_runner(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "play.yml").write_text(PLAYBOOK)
    run = ansible_runner.run(
        private_data_dir=str(tmp_path), playbook="play.yml", quiet=True, verbosity=3,
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )  # fmt: skip
    stdout = run.stdout.read()
    assert run.status == "successful", stdout[-3000:]
    assert "unable to load" not in stdout, "an enabled callback was not found"
    (line,) = [ln for ln in stdout.splitlines() if "specgate.project.plugins_preload:" in ln]
    loaded = int(line.split("plugins_preload:", 1)[1].split()[0])
    # ansible's own filter and test files and the project's filter_plugins/*.py, at least
    assert loaded > len(list((ROOT / "filter_plugins").glob("*.py"))), line


VARS_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - {name: One, ansible.builtin.debug: {msg: one}}
    - {name: Two, ansible.builtin.debug: {msg: two}}
    - {name: The project's directory, ansible.builtin.debug: {msg: "{{ specgate_project_dir }}"}}
"""


def test_the_project_dir_vars_plugin_is_loaded_once_per_run_not_at_each_read_of_a_hosts_variables(tmp_path):
    """ansible-core reads the vars plugins a few times per task; a plugin that is not stateless is loaded again, and its
    DOCUMENTATION parsed again, each time (10 loads for these three tasks)."""
    (tmp_path / "play.yml").write_text(VARS_PLAYBOOK)
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory",
           "ANSIBLE_DEBUG": "1"}  # fmt: skip
    run = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
         str(tmp_path / "play.yml")],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"msg: {ROOT}\n" in run.stdout  # the plugin ran: the variable reached the task (YAML results)
    loads = [line for line in run.stdout.splitlines() if "Loading VarsModule" in line and "project_dir" in line]
    assert len(loads) == 1, loads
