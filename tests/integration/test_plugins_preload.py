"""The filter and test plugins are loaded once in the controller's main process, also when ansible-runner drives the
playbook (as the tests and Python callers do): ansible-runner replaces the callback path with its own, so the preload
callback lives in the project's collection (local_collections/ansible_collections/specgate/project), a path it does
not touch."""

from __future__ import annotations

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
