"""What a no-op re-run of deploy.yml does not ask the host (issue 18): Ansible's facts, which no stage reads, and
the looks that only check mode needs (does the venv, nvcc exist yet on a bare host), which a real run never reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# Ansible's magic and connection variables the roles read: none is a gathered fact.
NOT_FACTS = {
    "ansible_check_mode", "ansible_diff_mode", "ansible_config_file", "ansible_host", "ansible_user",
    "ansible_python_interpreter", "ansible_playbook_python", "ansible_version", "ansible_job_id",
    "ansible_play_hosts_all", "ansible_play_name", "ansible_failed_result", "ansible_failed_task",
    "ansible_managed", "ansible_async_dir", "ansible_async", "ansible_password", "ansible_become_password",
    "ansible_play_batch", "ansible_forks", "ansible_inventory_sources",
}


def _code_lines(path: Path) -> str:
    """The file without its comment lines (comments may name facts; only code reads them)."""
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))


def _deploy_and_sweep_sources() -> list[Path]:
    roles = [p for p in (ROOT / "roles").glob("*/*/*") if p.parent.name in {"tasks", "templates", "vars", "defaults"}]
    play_parts = [*(ROOT / "playbooks" / "templates").glob("*"), ROOT / "playbooks" / "tasks" / "summary.yml",
                  ROOT / "playbooks" / "deploy.yml", ROOT / "playbooks" / "sweep.yml", *(ROOT / "templates").glob("*")]
    return [p for p in roles + play_parts if p.is_file()]


def test_deploy_and_sweep_gather_no_facts_and_no_stage_reads_them():
    deploy = yaml.safe_load((ROOT / "playbooks" / "deploy.yml").read_text())
    sweep = yaml.safe_load((ROOT / "playbooks" / "sweep.yml").read_text())
    replicas = [p for p in deploy + sweep if p["hosts"] == "sglang_hosts"]
    assert len(replicas) == 3  # deploy's plan and deploy plays, sweep's play
    assert [p.get("gather_facts") for p in replicas] == [False, False, False]
    read = {}
    for path in _deploy_and_sweep_sources():
        for name in set(re.findall(r"\bansible_[a-z_]+", _code_lines(path))) - NOT_FACTS:
            read.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert read == {}, f"a stage reads Ansible facts: gather them (a subset) in the plays that run it: {read}"


CHECK_MODE_ONLY = [
    ("roles/cuda_toolkit/tasks/install_pypi.yml", "__cuda_toolkit_venv_python"),
    ("roles/cuda_toolkit/tasks/probe.yml", "__cuda_toolkit_nvcc"),
    ("roles/sglang_env/tasks/install.yml", "__sglang_env_venv_before"),
    ("roles/sglang_env/tasks/patches.yml", "__sglang_env_venv_python"),
]


@pytest.mark.parametrize(("path", "register"), CHECK_MODE_ONLY, ids=[r for _, r in CHECK_MODE_ONLY])
def test_a_look_only_check_mode_needs_runs_only_in_check_mode_and_only_check_mode_reads_it(path, register):
    tasks = yaml.safe_load((ROOT / path).read_text())
    (look,) = [t for t in tasks if t.get("register") == register]
    assert "ansible.builtin.stat" in look
    assert "ansible_check_mode" in str(look.get("when")), look
    readers = [t for t in tasks if t is not look and register in yaml.safe_dump(t)]
    assert readers, f"nothing reads {register}"
    for task in readers:
        conditions = task["when"] if isinstance(task["when"], list) else [task["when"]]
        # Read only behind "not ansible_check_mode or": a real run never evaluates the skipped look.
        reading = [c for c in conditions if register in c]
        assert reading, task["name"]
        assert all(c.startswith("not ansible_check_mode or ") for c in reading), (task["name"], reading)
