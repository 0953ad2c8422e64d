"""specgate_project_dir: the one variable roles find the project's templates/ and reports/ through, and the refusal of
a run without it, naming the variable and the fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.project_dir import ProjectDirUnset, project_path
from specgate_project import specgate_project_path

ROOT = Path(__file__).resolve().parents[2]


def test_a_project_path_is_inside_the_checkout():
    assert project_path("/opt/specgate/", "templates/sglang.service.j2") == "/opt/specgate/templates/sglang.service.j2"
    assert project_path("/opt/specgate", "") == "/opt/specgate"


@pytest.mark.parametrize("unset", [None, "", "  "])
def test_without_the_project_dir_the_path_is_refused_naming_the_variable_and_the_fix(unset):
    with pytest.raises(ProjectDirUnset) as refused:
        project_path(unset, "templates/sglang.service.j2")
    assert str(refused.value).startswith("specgate_project_dir is unset, so the project's templates/sglang.service.j2")
    assert "set specgate_project_dir to the specgate checkout" in str(refused.value)
    with pytest.raises(AnsibleFilterError, match="specgate_project_dir is unset"):
        specgate_project_path(unset, "reports")


def test_no_role_finds_project_files_through_the_ansible_cfg_any_more():
    """ansible_config_file is the user's own file under a playbook of theirs, and undefined without one."""
    assert (ROOT / "roles").is_dir()
    assert (ROOT / "playbooks").is_dir()
    readers = subprocess.run(["grep", "-rln", "ansible_config_file", "roles", "playbooks", "deploy.yml"], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
    assert [path for path in readers if not path.endswith("README.md")] == []


def test_every_role_default_that_names_a_project_file_goes_through_the_one_filter():
    reading = {}
    for defaults in sorted((ROOT / "roles").glob("*/defaults/main.yml")):
        for name, value in (yaml.safe_load(defaults.read_text()) or {}).items():
            if isinstance(value, str) and "specgate_project_dir" in value:
                assert "specgate_project_path(" in value, name
                reading[name] = value
    assert {"sglang_service_unit_template", "sglang_router_unit_template", "spec_gate_reports_dir",
            "fleet_rollout_reports_dir", "spec_sweep_reports_dir"} <= set(reading)
