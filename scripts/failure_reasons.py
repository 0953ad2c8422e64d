"""Why a test stage failed, in one line each, for the closing summary of scripts/test.

A CI log is often read only by its tail: the summary names each failed test or scenario, and this says why beside it
(the assertion's first line, the failed task and its message), so a failure that does not happen again on another
machine can still be understood.

    python3 scripts/failure_reasons.py junit REPORT.xml      # "tests failures errors skipped", then
                                                             # "classname::name<TAB>reason" per failed test
    python3 scripts/failure_reasons.py molecule SCENARIO.log # the reason a scenario failed, one line
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

# A reason is a hint beside a name, not the log: the whole log is printed above the summary.
REASON_CHARS = 300


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    """Whitespace folded to single spaces, cut to ``limit`` characters with an ellipsis."""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


def _junit_root(report: Path) -> ET.Element | None:
    """The report's root; None when pytest wrote none (killed, or it never started: scripts/test says so by its exit
    code)."""
    try:
        return ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return None


def junit_counts(report: Path) -> tuple[int, int, int, int]:
    """Tests, failures, errors and skipped of a JUnit XML report (one suite or several); all 0 without a report."""
    root = _junit_root(report)
    if root is None:
        return 0, 0, 0, 0
    suites = [root] if root.tag == "testsuite" else list(root)
    total = {key: sum(int(suite.get(key, 0)) for suite in suites) for key in ("tests", "failures", "errors", "skipped")}
    return total["tests"], total["failures"], total["errors"], total["skipped"]


def junit_failures(report: Path) -> Iterator[tuple[str, str]]:
    """Each failed or erroring test case of a JUnit XML report: its id and the first line of what failed; none
    without a report."""
    root = _junit_root(report)
    if root is None:
        return
    for case in root.iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            continue
        message = problem.get("message") or (problem.text or "")
        yield f"{case.get('classname')}::{case.get('name')}", one_line(message)


# Ansible's failure line (`fatal: [host]: FAILED! => ...`, `failed: [host] (item=...) => ...`), the task it belongs
# to, and pytest's short summary line in a verify step (`FAILED tests/test_x.py::test_y - AssertionError: ...`).
_TASK = re.compile(r"^TASK \[(?P<task>.*)\]")
_FATAL = re.compile(r"^(fatal|failed): \[(?P<host>[^\]]+)\]")
_PYTEST_FAILED = re.compile(r"^(FAILED|ERROR) (?P<test>\S+)( - (?P<why>.*))?$")
_MOLECULE_ERROR = re.compile(r"^(CRITICAL|ERROR) (?P<why>.*)$")


def molecule_reason(log: str) -> str:
    """The last thing that failed in a molecule scenario's log: a verify test, else the later of an Ansible task's
    failure that was not ignored (its name, host and the message's first lines) and molecule's own error; '' when the
    log names none."""
    lines = log.splitlines()
    tests = [m for m in map(_PYTEST_FAILED.match, lines) if m]
    if tests:
        return one_line("; ".join(f"{m['test']} - {m['why'] or ''}" for m in tests))
    for index in range(len(lines) - 1, -1, -1):
        error = _MOLECULE_ERROR.match(lines[index])
        if error:
            return one_line(error["why"])
        fatal = _FATAL.match(lines[index])
        if not fatal:
            continue
        following = lines[index + 1:index + 31]
        if any(line.startswith("...ignoring") for line in following):
            continue
        task = next((m["task"] for m in map(_TASK.match, reversed(lines[:index])) if m), "")
        # the result's own lines are indented (the YAML callback); the first line that is not ends it
        body = []
        for line in following[:12]:
            if not line.startswith((" ", "\t")):
                break
            body.append(line)
        detail = " ".join(body)
        msg = detail.split("msg:", 1)[1] if "msg:" in detail else lines[index].split("=>", 1)[-1]
        return one_line(f"task '{task}' on {fatal['host']}: {msg}")
    return ""


def main(argv: list[str]) -> int:
    kind, path = argv[1], Path(argv[2])
    if kind == "junit":
        print(*junit_counts(path))
        for test, reason in junit_failures(path):
            print(f"{test}\t{reason}")
    elif kind == "molecule":
        print(molecule_reason(path.read_text(errors="replace")))
    else:
        print(f"failure_reasons.py: unknown kind {kind!r} (junit or molecule)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
