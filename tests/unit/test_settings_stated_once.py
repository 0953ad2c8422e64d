"""How many hand-written places state each deployment setting, counted, so a copy cannot come back unnoticed (#30).

The goal is 2: its declaration in sglang_service's meta/argument_specs.yml and its default in defaults/main.yml.
Derived, not counted: the renderer's keys, types and render order (generated), the flags rendered one to one, the
sweep's axis map, configs/README.md's table. 17 of the 37 settings are at 2. The others are still named by tables of
meaning argument_specs cannot hold: which algorithms a speculative knob applies to, its short form in a release's
label, its grid axis and its legend in the sweep's plots (one table, sglang_flags.SPEC_KEYS, from which the sweep's
axes per algorithm and its legends are derived), which group of flags renders a key, a bound beyond the type, the
drafter's variables a sweep point leaves to the weights stage. The bounds below are today's counts: lower them when a
table goes, never raise them.

A statement is counted wherever the setting's name is a key or an element of a table: a YAML mapping key in a role's
defaults, vars or argument_specs, or a string in a module-level dict, tuple, set or list of the project's Python.
Generated files are not counted (their generators' --check holds them to the role)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from ansible.module_utils.specgate.service.sglang_flags import DEPLOYMENT_KEYS, VAR_PREFIX

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {ROOT / "module_utils" / "specgate" / "service" / "deployment_schema.py"}
PYTHON_DIRS = ("module_utils", "filter_plugins", "library", "action_plugins")
# Today's counts (see the docstring): the most statements of one setting, and of all of them together.
MOST = 5
TOTAL = 100
GOAL = 2


def _yaml_statements(keys: set[str]) -> Counter[str]:
    """Mapping keys naming a setting (sglang_service_<key>, or <key> in sglang_service's own vars) in the roles'
    defaults, vars and argument_specs; an argument_specs file counts once (entry points share options by anchor)."""
    counts: Counter[str] = Counter()
    for path in sorted(ROOT.glob("roles/*/*/*.yml")):
        if path.parent.name not in ("defaults", "vars", "meta"):
            continue
        own_vars = path.parent.name == "vars" and path.parent.parent.name == "sglang_service"
        named = set()
        for match in re.finditer(r"^\s*([a-z0-9_]+):", path.read_text(), re.MULTILINE):
            name = match.group(1)
            key = name.removeprefix(VAR_PREFIX) if name.startswith(VAR_PREFIX) else (name if own_vars else None)
            if key in keys:
                named.add(key)
        counts.update(named)
    return counts


def _table_strings(node: ast.AST) -> list[str]:
    """The strings that are a dict's keys or a collection's elements within a module-level value."""
    found = []
    for child in ast.walk(node):
        items = child.keys if isinstance(child, ast.Dict) else (
            child.elts if isinstance(child, ast.Tuple | ast.List | ast.Set) else [])
        found += [item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return found


def _is_table(statement: ast.stmt) -> bool:
    """A module-level assignment, other than a module's ARGUMENT_SPEC (its parameters are the module's own names)."""
    if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
        return False
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return not any(isinstance(target, ast.Name) and "ARGUMENT_SPEC" in target.id.upper() for target in targets)


def _python_statements(keys: set[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for directory in PYTHON_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            if path in GENERATED:
                continue
            named = set()
            for statement in ast.parse(path.read_text()).body:
                if _is_table(statement):
                    for text in _table_strings(statement.value):
                        key = text.removeprefix(VAR_PREFIX)
                        if key in keys:
                            named.add(key)
            counts.update(named)
    return counts


def statements() -> Counter[str]:
    keys = set(DEPLOYMENT_KEYS)
    counts = _yaml_statements(keys) + _python_statements(keys)
    return Counter({key: counts[key] for key in DEPLOYMENT_KEYS})


def test_no_deployment_setting_is_stated_in_more_places_than_today():
    counts = statements()
    print("\n" + "\n".join(f"{count}  {key}" for key, count in counts.most_common()))
    print(f"{sum(1 for c in counts.values() if c <= GOAL)} of {len(counts)} settings at the goal of {GOAL}")
    over = {key: count for key, count in counts.items() if count > MOST}
    assert not over, f"stated in more than {MOST} hand-written places (derive the copy instead): {over}"
    assert sum(counts.values()) <= TOTAL, f"{sum(counts.values())} statements, more than {TOTAL}: derive the new copy"


def test_every_deployment_setting_is_declared_and_has_its_default():
    assert all(count >= 2 for count in statements().values()), statements()


def test_a_restated_table_is_counted(tmp_path, monkeypatch):
    """The count sees a new hand-written table that restates a setting, so a copy cannot come back unnoticed."""
    copy = tmp_path / "module_utils" / "copy.py"
    copy.parent.mkdir()
    copy.write_text('RESTATED = {"block_size": "block-size"}\nUSED = 1\n')
    for name in ("filter_plugins", "library", "action_plugins"):
        (tmp_path / name).mkdir()
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert _python_statements({"block_size", "port"}) == Counter({"block_size": 1})
