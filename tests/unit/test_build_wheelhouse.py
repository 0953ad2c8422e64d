"""The wheelhouse builder (scripts/build_wheelhouse.py) builds the sim wheel outside the shared tree: molecule's lanes
build different wheelhouses at the same moment (the converged image's and a scenario's), and two setuptools builds in
one tree break each other (a gate scenario failed that way 11 s into a CI run)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from script_loader import ROOT, load_script

build_wheelhouse = load_script("build_wheelhouse")


def test_side_by_side_sim_builds_both_succeed_and_leave_the_tree_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "checkout"
    (tree / "sim").mkdir(parents=True)
    for part in ("pyproject.toml", "specgate_sim"):
        source = ROOT / "sim" / part
        target = tree / "sim" / part
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            target.write_bytes(source.read_bytes())
    before = sorted(path.relative_to(tree).as_posix() for path in tree.rglob("*"))
    monkeypatch.setattr(build_wheelhouse, "ROOT", tree)

    outs = [tmp_path / "one", tmp_path / "two"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(build_wheelhouse.build_sim_wheel, outs))

    for out in outs:
        assert [wheel.name.split("-")[0] for wheel in out.glob("*.whl")] == ["specgate_sim"], out
    assert sorted(path.relative_to(tree).as_posix() for path in tree.rglob("*")) == before
