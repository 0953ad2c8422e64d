"""The no-op verify benchmark: a 550 GB snapshot costs what a 1 GB one does, well under 2 s."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

# Each runs the benchmark's playbooks over a 550 GB and a 1 GB snapshot: the slow tier.
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_weights_verify.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_weights_verify", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_noop_verify_of_550_gb_is_as_cheap_as_1_gb(capsys):
    assert _bench().main(["--runs", "3"]) == 0
    out = capsys.readouterr().out
    medians = {float(m.group(1)): float(m.group(2))
               for m in re.finditer(r"^\s*([\d.]+) GB\s+\d+\s+[\d.]+ MB\s+([\d.]+)", out, re.MULTILINE)}
    assert set(medians) == {1.0, 550.0}
    assert max(medians.values()) < 2.0


def test_benchmark_fails_when_the_limit_is_not_met(capsys):
    assert _bench().main(["--runs", "1", "--large-gb", "5", "--limit-s", "0"]) == 1
    assert "FAIL" in capsys.readouterr().out
