"""An include in a loop must not share `item` with a loop in the file it includes.

Ansible evaluates an include's `vars` lazily: a var such as `image: "{{ item.item }}"` is rendered again inside each
task of the included file, where a task's own loop has rebound `item`. Bootstrap from nothing failed this way in the
always-block of the bootstrap's image build (`'str' object has no attribute 'item'`); only a machine with no test-host
images ever ran that path, so the check is here, over every task file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INCLUDE_KEYS = ("ansible.builtin.include_tasks", "include_tasks")
LOOP_KEYS = ("loop", "with_items", "with_dict", "with_list", "with_together", "with_subelements")


def task_files() -> list[Path]:
    files = sorted((ROOT / "playbooks").rglob("*.yml")) + sorted((ROOT / "roles").glob("*/tasks/*.yml"))
    files += sorted((ROOT / "molecule").rglob("*.yml"))
    return files


def tasks_in(document: object) -> Iterator[dict]:
    """Every task of a task file or playbook, blocks and plays walked."""
    if isinstance(document, list):
        for entry in document:
            yield from tasks_in(entry)
    elif isinstance(document, dict):
        for section in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            if isinstance(document.get(section), list):
                yield from tasks_in(document[section])
        if not any(isinstance(document.get(key), list) for key in ("tasks", "block", "pre_tasks", "post_tasks")):
            yield document


def loops_over_item(task: dict) -> bool:
    looped = any(key in task for key in LOOP_KEYS)
    return looped and (task.get("loop_control") or {}).get("loop_var", "item") == "item"


def included_path(task: dict, including: Path) -> Path | None:
    target = next((task[key] for key in INCLUDE_KEYS if key in task), None)
    if isinstance(target, dict):
        target = target.get("file")
    if not isinstance(target, str) or "{{" in target:
        return None
    for base in (including.parent, including.parent.parent / "tasks"):
        if (base / target).is_file():
            return base / target
    raise AssertionError(f"{including.relative_to(ROOT)} includes {target}, which is not there")


def loops_inside(path: Path, seen: frozenset[Path] = frozenset()) -> list[str]:
    """Names of the tasks in `path`, or in what it includes, that loop over `item`."""
    if path in seen:
        return []
    found = []
    for task in tasks_in(yaml.safe_load(path.read_text(encoding="utf-8"))):
        if loops_over_item(task):
            found.append(f"{path.relative_to(ROOT)}: {task.get('name', '?')}")
        nested = included_path(task, path)
        if nested is not None:
            found += loops_inside(nested, seen | {path})
    return found


def looped_includes(*, over_item_only: bool = True) -> list[tuple[Path, dict]]:
    """Every include in a loop, in every task file: by default those whose loop variable is `item`."""
    return [
        (path, task)
        for path in task_files()
        for task in tasks_in(yaml.safe_load(path.read_text(encoding="utf-8")))
        if any(key in task for key in INCLUDE_KEYS)
        and (loops_over_item(task) if over_item_only else any(key in task for key in LOOP_KEYS))
    ]


def test_every_looped_include_is_found() -> None:
    # The subject must exist: the sweep launches its points in a looped include.
    looped = looped_includes(over_item_only=False)
    assert any(path.parts[-3:] == ("spec_sweep", "tasks", "main.yml") for path, _ in looped)


@pytest.mark.parametrize(
    ("including", "task"),
    looped_includes(),
    ids=lambda value: value.name if isinstance(value, Path) else str(value.get("name", "?"))[:40],
)
def test_looped_include_does_not_share_item_with_its_tasks(including: Path, task: dict) -> None:
    target = included_path(task, including)
    if target is None:
        pytest.fail(f"{including.relative_to(ROOT)}: {task.get('name')} includes a templated path; name a file")
    clashes = loops_inside(target)
    assert not clashes, (
        f"{including.relative_to(ROOT)}: '{task.get('name')}' loops over `item` and includes tasks that loop over "
        f"`item` too: {clashes}. Give the include its own loop_control.loop_var."
    )


def test_the_check_finds_a_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = tmp_path / "inner.yml"
    inner.write_text("- name: Remove files\n  ansible.builtin.file: {path: x, state: absent}\n  loop: [a, b]\n")
    outer = tmp_path / "outer.yml"
    outer.write_text("- name: Build each image\n  ansible.builtin.include_tasks: inner.yml\n  loop: [x]\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert loops_inside(inner) == ["inner.yml: Remove files"]
    (task,) = tasks_in(yaml.safe_load(outer.read_text()))
    with pytest.raises(AssertionError, match=r"Give the include its own loop_control\.loop_var"):
        test_looped_include_does_not_share_item_with_its_tasks(outer, task)
