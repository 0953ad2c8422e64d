"""The fast tier's guard (the project's root conftest.py): a test whose call ran long without the slow marker is
named at the end of the run (the call alone: a module's shared fixture is set up in whichever test runs first); a
marked one, a quick one and a molecule scenario's own verify test are not."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]


def _guard():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _report(nodeid: str, when: str, duration: float, *markers: str) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, when=when, duration=duration, keywords={name: 1 for name in markers})


class _Reporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_a_long_test_without_the_marker_is_named_with_its_call_time():
    guard = _guard()
    over = guard.SLOW_AFTER_S
    for report in (_report("t.py::grown", "setup", over * 5), _report("t.py::grown", "call", over * 1.2),
                   _report("t.py::grown", "teardown", over * 5),
                   _report("t.py::shared_fixture_first", "setup", over * 7),
                   _report("t.py::shared_fixture_first", "call", over * 0.1),
                   _report("t.py::marked", "call", over * 3, "slow"),
                   _report("t.py::scenario", "call", over * 3, "molecule"),
                   _report("molecule/fleet/tests/test_fleet.py::rollout", "call", over * 3),
                   _report("t.py::quick", "call", over * 0.9)):  # fmt: skip
        guard.pytest_runtest_logreport(report)
    reporter = _Reporter()
    guard.pytest_terminal_summary(reporter)
    assert reporter.lines[0].startswith(f"over {over:.0f} s without the slow marker")
    assert reporter.lines[1:] == [f"{over * 1.2:6.1f}s t.py::grown"]


def test_a_run_of_quick_tests_prints_nothing():
    guard = _guard()
    guard.pytest_runtest_logreport(_report("t.py::quick", "call", 0.1))
    reporter = _Reporter()
    guard.pytest_terminal_summary(reporter)
    assert reporter.lines == []
