"""The coding eval's judge: pull the code out of a model's answer, run the problem's asserts in the sandbox
(module_utils/specgate/gate/sandbox.py), and sum a run's outcomes into its pass rate."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ansible.module_utils.specgate.gate.coding_problems import PROBLEMS_BY_NAME, Problem
from ansible.module_utils.specgate.gate.sandbox import PASSED, SYNTAX_ERROR, Sandbox, check_sandbox, run_asserts

NO_CODE = "no_code"
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


def judge(problem: Problem, answer: str, finish_reason: str | None, sandbox: Sandbox) -> dict:
    """Outcome of one answer. A truncated answer whose code does not compile counts as ``truncated`` so a
    too-small token limit is told apart from a wrong model."""
    extracted = extract_code(answer, problem.name)
    cut_off = finish_reason == "length"
    if extracted.code is None:
        outcome = TRUNCATED if cut_off else NO_CODE
        return {"name": problem.name, "outcome": outcome, "detail": "no code defining the function in the answer"}
    outcome, detail = run_asserts(extracted.code, problem.asserts, sandbox)
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


def pending(answers: Sequence[dict]) -> dict:
    """A run's eval before judging: the answers as generated (``name``, ``answer``, ``finish_reason``). The
    benchmark collects them; only ``judge_runs`` runs their code."""
    return {"pending": True, "answers": [dict(a) for a in answers]}


def is_pending(ev: object) -> bool:
    return isinstance(ev, dict) and bool(ev.get("pending"))


def judge_runs(bench: dict, sandbox: Sandbox, concurrency: int = 4) -> tuple[dict, dict | None]:
    """``bench`` (schema specgate.bench/v1) with every pending eval judged in the sandbox, and the probe's
    report (None when no run had an eval, so nothing was run). The sandbox is checked first."""
    runs = [run for run in bench.get("runs", []) if is_pending(run.get("eval"))]
    if not runs:
        return bench, None
    report = check_sandbox(sandbox)
    judged = []
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        for run in bench["runs"]:
            ev = run.get("eval")
            if not is_pending(ev):
                judged.append(run)
                continue
            jobs = []
            for a in ev["answers"]:
                if a["name"] not in PROBLEMS_BY_NAME:
                    raise ValueError(f"the benchmark answered an unknown eval problem {a['name']!r}")
                problem = PROBLEMS_BY_NAME[a["name"]]
                jobs.append(pool.submit(judge, problem, a["answer"], a.get("finish_reason"), sandbox))
            judged.append({**run, "eval": summarize([job.result() for job in jobs])})
    return {**bench, "runs": judged}, report
