"""The fast tier stays fast (scripts/test --no-molecule leaves out the tests marked slow): a test whose call ran longer
than SLOW_AFTER_S without the marker is named at the end of the run, so it is marked when it grows, not found later in
the tier's time. The call alone: a module's shared fixture (a sim, SGLang's resolver) is set up once, in whichever of
its tests runs first. Molecule's verify tests (molecule/*/tests, also under this rootdir) are not tiered."""

from __future__ import annotations

import pytest

SLOW_AFTER_S = 10.0
_unmarked: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tiered = not report.nodeid.startswith("molecule/")
    if tiered and report.when == "call" and not {"slow", "molecule"} & set(report.keywords):
        _unmarked[report.nodeid] = report.duration


def pytest_terminal_summary(terminalreporter) -> None:
    grown = sorted(((s, n) for n, s in _unmarked.items() if s > SLOW_AFTER_S), reverse=True)
    if grown:
        terminalreporter.write_sep("=", f"over {SLOW_AFTER_S:.0f} s without the slow marker (mark them slow)")
        for seconds, nodeid in grown:
            terminalreporter.write_line(f"{seconds:6.1f}s {nodeid}")
