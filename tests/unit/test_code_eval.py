"""The coding eval: extraction from answers, the sandbox, and the problem set against known answers."""

from __future__ import annotations

import time

import pytest
from ansible.module_utils.specgate import code_eval
from ansible.module_utils.specgate.code_eval import Limits, extract_code, judge, run_asserts, summarize
from ansible.module_utils.specgate.coding_problems import PROBLEMS, PROBLEMS_BY_NAME, select_problems
from specgate_sim import codebank

pytestmark = pytest.mark.host

FAST = Limits(timeout_s=5.0)


def test_eval_has_at_least_twenty_problems_including_the_field_notes_five():
    names = [p.name for p in PROBLEMS]
    assert len(names) >= 20
    assert len(set(names)) == len(names)
    assert names[:5] == ["is_palindrome", "fib", "merge_sorted", "word_count", "gcd"]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_every_prompt_names_its_function_in_backticks_and_asks_for_a_python_block(problem):
    assert f"`{problem.name}(" in problem.prompt
    assert "```python" in problem.prompt
    assert len(problem.asserts) >= 2


def test_extract_picks_the_fenced_block_that_defines_the_function():
    answer = (
        "Here is a helper:\n```python\ndef helper():\n    pass\n```\nAnd the answer:\n"
        "```python\ndef gcd(a, b):\n    return a\n```\n"
    )
    got = extract_code(answer, "gcd")
    assert got.code == "def gcd(a, b):\n    return a"
    assert got.closed


def test_extract_drops_reasoning_before_the_code():
    answer = "<think>maybe ```python\ndef gcd(a, b): wrong\n```</think>```python\ndef gcd(a, b):\n    return 1\n```"
    assert extract_code(answer, "gcd").code == "def gcd(a, b):\n    return 1"


def test_extract_takes_an_unclosed_fence_as_far_as_it_goes_and_marks_it_open():
    got = extract_code("```python\ndef fib(n):\n    a, b = 0, 1\n", "fib")
    assert got.code == "def fib(n):\n    a, b = 0, 1"
    assert not got.closed


def test_extract_accepts_bare_code_with_its_imports():
    answer = "Sure.\nimport math\ndef lcm(a, b):\n    return abs(a * b) // math.gcd(a, b)\n"
    assert extract_code(answer, "lcm").code.startswith("import math\ndef lcm(")


def test_extract_reports_no_code_when_the_function_is_absent():
    assert extract_code("I cannot help with that.", "gcd").code is None


def test_sandbox_passes_correct_code_and_names_the_failing_assert():
    assert run_asserts("def gcd(a, b):\n    return 6", ["gcd(12, 18) == 6"], FAST)[0] == code_eval.PASSED
    outcome, detail = run_asserts("def gcd(a, b):\n    return 1", ["gcd(12, 18) == 6"], FAST)
    assert outcome == code_eval.FAILED
    assert "gcd(12, 18) == 6" in detail


def test_sandbox_reports_exceptions_and_syntax_errors():
    assert run_asserts("def f(:\n", ["f()"], FAST)[0] == code_eval.SYNTAX_ERROR
    assert run_asserts("def f():\n    return 1 / 0", ["f() == 1"], FAST)[0] == code_eval.ERROR


def test_sandbox_kills_an_endless_loop_at_the_timeout():
    started = time.monotonic()
    outcome, _ = run_asserts("def f():\n    while True:\n        pass", ["f()"], Limits(timeout_s=1.0))
    assert outcome == code_eval.TIMEOUT
    assert time.monotonic() - started < 5


def test_sandbox_caps_memory():
    outcome, _ = run_asserts("def f():\n    return len(bytearray(4 * 1024**3))", ["f() > 0"], FAST)
    assert outcome == code_eval.ERROR


def test_sandbox_does_not_run_in_this_process_nor_see_its_environment(monkeypatch):
    monkeypatch.setenv("SPECGATE_SECRET_FOR_TEST", "visible")
    code = "import os\ndef f():\n    return os.environ.get('SPECGATE_SECRET_FOR_TEST')"
    assert run_asserts(code, ["f() is None"], FAST)[0] == code_eval.PASSED
    assert "f" not in globals()


def test_a_truncated_answer_is_told_apart_from_wrong_code():
    problem = PROBLEMS_BY_NAME["merge_sorted"]
    answer = "```python\ndef merge_sorted(a, b):\n    result = []\n    while (i < len(a"
    assert judge(problem, answer, "length", FAST)["outcome"] == code_eval.TRUNCATED


def test_a_truncated_answer_whose_code_is_complete_still_counts():
    problem = PROBLEMS_BY_NAME["gcd"]
    answer = (
        "```python\ndef gcd(a, b):\n    a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n    return a\n"
    )
    assert judge(problem, answer, "length", FAST)["outcome"] == code_eval.PASSED


def test_summary_counts_outcomes_and_pass_rate():
    s = summarize([{"outcome": "passed"}, {"outcome": "failed"}, {"outcome": "passed"}, {"outcome": "timeout"}])
    assert s["passed"] == 2
    assert s["pass_rate"] == 0.5
    assert s["outcomes"] == {"passed": 2, "failed": 1, "timeout": 1}


def test_selecting_an_unknown_problem_names_the_variable():
    with pytest.raises(ValueError, match=r"spec_gate_bench_eval_problems.*nope"):
        select_problems(["gcd", "nope"])




@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_asserts_accept_the_sims_correct_answer_and_reject_its_wrong_one(problem):
    """The sim's bank holds a correct and a subtly wrong answer per problem: the asserts must tell them apart."""
    entry = codebank.BANK[problem.name]
    assert run_asserts(entry.correct, problem.asserts, FAST)[0] == code_eval.PASSED
    assert run_asserts(entry.wrong, problem.asserts, FAST)[0] != code_eval.PASSED
