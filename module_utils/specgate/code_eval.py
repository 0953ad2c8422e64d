"""Judge generated code: pull it out of a model's answer and run the problem's asserts in a sandboxed subprocess.

Generated code never runs in the caller's process: a child Python in isolated mode, in an empty
temporary directory, with an empty environment, CPU/memory/file-size/open-file limits and a wall-clock
timeout that kills its whole process group.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ansible.module_utils.specgate.coding_problems import Problem

PASSED = "passed"
FAILED = "failed"  # an assert did not hold
ERROR = "error"  # the code raised
TIMEOUT = "timeout"
NO_CODE = "no_code"
SYNTAX_ERROR = "syntax_error"
TRUNCATED = "truncated"  # cut off by the token limit before the code was complete

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL)
_FENCE_OPEN = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)
_FENCE_CLOSE = re.compile(r"^[ \t]*```[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Extracted:
    code: str | None
    closed: bool  # False when the answer ended inside an open fence (or had no fence at all)


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    """(language, body, closed) for each fenced block, in order."""
    blocks = []
    pos = 0
    while True:
        m = _FENCE_OPEN.search(text, pos)
        if not m:
            return blocks
        end = _FENCE_CLOSE.search(text, m.end())
        if not end:
            blocks.append((m.group(1).lower(), text[m.end() :].strip("\n"), False))
            return blocks
        blocks.append((m.group(1).lower(), text[m.end() : end.start()].strip("\n"), True))
        pos = end.end()


def extract_code(answer: str, function_name: str) -> Extracted:
    """The code that defines ``function_name``: reasoning dropped, the right fenced block picked, an unclosed
    fence (truncated answer) taken as far as it goes, bare code accepted."""
    text = _THINK.sub("", answer)
    definition = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(function_name)}\s*\(", re.MULTILINE)
    blocks = [b for b in _blocks(text) if b[0] in ("", "python", "py", "python3")]
    for _lang, body, closed in blocks:
        if definition.search(body):
            return Extracted(body, closed)
    if blocks:
        return Extracted(blocks[0][1] or None, blocks[0][2])
    m = definition.search(text)
    if not m:
        return Extracted(None, False)
    # Bare code: start at the imports just above the definition, if any, so they come along.
    start = m.start()
    lines_before = text[:start].splitlines(keepends=True)
    while lines_before and re.match(r"^\s*(import |from \S+ import )", lines_before[-1]):
        start -= len(lines_before.pop())
    return Extracted(text[start:].strip("\n"), True)


_HARNESS = """\
import json, sys
def __raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc:
        return True
    return False
__marker = sys.argv[1]
__asserts = json.loads(sys.argv[2])
__ns = {"__raises": __raises, "__name__": "solution"}
with open("solution.py", encoding="utf-8") as __f:
    __source = __f.read()
try:
    exec(compile(__source, "solution.py", "exec"), __ns)
except SyntaxError as __e:
    print(__marker + json.dumps({"outcome": "syntax_error", "detail": str(__e)}))
    sys.exit(0)
except BaseException as __e:
    print(__marker + json.dumps({"outcome": "error", "detail": "while defining: %s: %s" % (type(__e).__name__, __e)}))
    sys.exit(0)
for __a in __asserts:
    try:
        __ok = eval(__a, __ns)
    except BaseException as __e:
        print(__marker + json.dumps({"outcome": "error", "detail": "%s -> %s: %s" % (__a, type(__e).__name__, __e)}))
        sys.exit(0)
    if not __ok:
        print(__marker + json.dumps({"outcome": "failed", "detail": "assert " + __a}))
        sys.exit(0)
print(__marker + json.dumps({"outcome": "passed", "detail": "%d asserts" % len(__asserts)}))
"""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_bytes: int = 1024 * 1024 * 1024
    file_bytes: int = 4 * 1024 * 1024
    open_files: int = 64


def _limiter(limits: Limits) -> Callable[[], None]:
    def apply() -> None:
        import resource

        cpu = int(limits.timeout_s) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_asserts(code: str, asserts: Sequence[str], limits: Limits, python: str = sys.executable) -> tuple[str, str]:
    """Run ``code`` then each assert in a sandboxed child; (outcome, detail)."""
    marker = f"@@specgate-{secrets.token_hex(8)}@@"
    with tempfile.TemporaryDirectory(prefix="specgate-eval-") as work:
        with open(os.path.join(work, "solution.py"), "w", encoding="utf-8") as f:
            f.write(code)
        with open(os.path.join(work, "harness.py"), "w", encoding="utf-8") as f:
            f.write(_HARNESS)
        out_path = os.path.join(work, "out.txt")
        # Output goes to a file, not a pipe, so the file-size limit caps a runaway print loop.
        with open(out_path, "w+b") as out:
            proc = subprocess.Popen(
                [python, "-I", "-S", "harness.py", marker, json.dumps(list(asserts))],
                cwd=work,
                env={"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_limiter(limits),  # noqa: PLW1509 - rlimits must be set in the child before exec
                start_new_session=True,
            )
            try:
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return TIMEOUT, f"killed after {limits.timeout_s:g} s"
            out.seek(0)
            output = out.read().decode("utf-8", errors="replace")
    for line in reversed(output.splitlines()):
        if line.startswith(marker):
            result = json.loads(line[len(marker) :])
            return result["outcome"], result["detail"][:500]
    if proc.returncode < 0:
        return ERROR, f"killed by signal {-proc.returncode} (resource limit)"
    return ERROR, f"exited {proc.returncode} without a verdict: {output[-300:]}"


def judge(problem: Problem, answer: str, finish_reason: str | None, limits: Limits) -> dict:
    """Outcome of one answer. A truncated answer whose code does not compile counts as ``truncated`` so a
    too-small token limit is told apart from a wrong model."""
    extracted = extract_code(answer, problem.name)
    cut_off = finish_reason == "length"
    if extracted.code is None:
        outcome = TRUNCATED if cut_off else NO_CODE
        return {"name": problem.name, "outcome": outcome, "detail": "no code defining the function in the answer"}
    outcome, detail = run_asserts(extracted.code, problem.asserts, limits)
    if outcome in (SYNTAX_ERROR, NO_CODE) and (cut_off or not extracted.closed):
        outcome = TRUNCATED
        detail = f"answer cut off before the code was complete ({detail})"
    return {"name": problem.name, "outcome": outcome, "detail": detail}


def summarize(results: Sequence[dict]) -> dict:
    passed = sum(1 for r in results if r["outcome"] == PASSED)
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return {
        "problems": len(results),
        "passed": passed,
        "pass_rate": (passed / len(results)) if results else None,
        "outcomes": outcomes,
        "results": list(results),
    }
