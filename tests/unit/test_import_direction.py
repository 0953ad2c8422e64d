"""The stages' code imports only from earlier stages of the data flow (and common/): a later stage's change never
breaks an earlier one, and no two stages import each other (service <-> gate did, through the cross-check)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "module_utils" / "specgate"
# DESIGN.md's data flow: bare host -> CUDA -> venv -> weights -> service -> gate; the sweep and the fleet drive them.
ORDER = ["common", "preflight", "cuda", "env", "weights", "service", "gate", "sweep", "fleet", "monitor"]
PREFIX = "ansible.module_utils.specgate."


def imported_packages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])  # fmt: skip
        out |= {name[len(PREFIX):].split(".")[0] for name in names if name.startswith(PREFIX)}
    return out


def test_every_stage_package_is_in_the_data_flows_order():
    packages = sorted(p.name for p in PACKAGES.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert sorted(ORDER) == packages


@pytest.mark.parametrize("package", ORDER)
def test_a_stage_imports_only_from_itself_and_earlier_stages(package):
    files = sorted((PACKAGES / package).glob("*.py"))
    assert files, package
    later = set(ORDER[ORDER.index(package) + 1:])
    wrong = {f.name: sorted(imported_packages(f) & later) for f in files if imported_packages(f) & later}
    assert wrong == {}, f"{package} imports later stages: {wrong}"


def test_the_check_sees_a_backward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from ansible.module_utils.specgate.gate.bench_client import BenchError\nimport json\n")
    assert imported_packages(module) == {"gate"}
