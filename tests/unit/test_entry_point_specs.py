"""Every role entry point a playbook or another role runs (import_role / include_role with tasks_from) has its own
argument_specs entry: Ansible checks a role's arguments only for an entry point that declares them, so one without
would take any value unchecked, after other hosts or stages may already have changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE_ACTIONS = ("ansible.builtin.import_role", "ansible.builtin.include_role", "import_role", "include_role")


def _tasks(node) -> Iterator[dict]:
    """Every task mapping in a parsed playbook or task file, blocks and plays included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(action in node for action in ROLE_ACTIONS):
            yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if key in node:
                yield from _tasks(node[key])


def role_entry_points() -> list[tuple[str, str, str]]:
    """(file, role, entry point) of each role a playbook or a role's task file runs."""
    files = [*ROOT.glob("*.yml"), *ROOT.glob("playbooks/**/*.yml"), *ROOT.glob("roles/*/tasks/*.yml")]
    found = []
    for path in sorted(files):
        for task in _tasks(yaml.safe_load(path.read_text())):
            args = next(task[action] for action in ROLE_ACTIONS if action in task)
            if isinstance(args, dict) and "{{" not in str(args.get("name", "")):
                found.append((str(path.relative_to(ROOT)), args["name"], args.get("tasks_from", "main")))
    return found


ENTRY_POINTS = role_entry_points()


def test_the_playbooks_run_role_entry_points():
    assert len(ENTRY_POINTS) > 20
    assert ("playbooks/deploy.yml", "sglang_service", "candidate") in ENTRY_POINTS


@pytest.mark.parametrize(("where", "role", "entry"), ENTRY_POINTS, ids=[f"{w}:{r}:{e}" for w, r, e in ENTRY_POINTS])
def test_every_entry_point_run_has_argument_specs(where, role, entry):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert entry in specs, f"{where} runs {role}'s {entry}, which has no argument_specs entry"
