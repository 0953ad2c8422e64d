"""What the sim says: coding-eval answers (right, subtly wrong, cut off), filler, tokens, prompt kinds."""

from __future__ import annotations

from typing import Any

import pytest
from specgate_sim import codebank, text
from specgate_sim.planning import Quality, plan

ALL = sorted(codebank.BANK)


def _run(code: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    return namespace[name]


def _passes(fn: Any, checks: list[tuple[tuple[Any, ...], Any]]) -> bool:
    for args, expected in checks:
        try:
            result = fn(*args)
        except ValueError:
            if expected != "raises":
                return False
            continue
        except Exception:
            return False
        if expected == "raises" or result != expected or type(result) is not type(expected):
            return False
    return True


def test_the_bank_covers_the_24_eval_functions() -> None:
    assert len(ALL) == 24
    assert set(codebank.CHECKS) == set(ALL)
    for five in ("is_palindrome", "fib", "merge_sorted", "word_count", "gcd"):
        assert five in codebank.BANK


@pytest.mark.parametrize("name", ALL)
def test_correct_answer_passes_its_checks(name: str) -> None:
    answer, natural = codebank.answer(name, "correct")
    assert natural
    code = answer.removeprefix("```python\n").removesuffix("\n```")
    assert _passes(_run(code, name), codebank.CHECKS[name])


@pytest.mark.parametrize("name", ALL)
def test_wrong_answer_runs_but_fails_a_check(name: str) -> None:
    answer, natural = codebank.answer(name, "wrong")
    assert natural
    code = answer.removeprefix("```python\n").removesuffix("\n```")
    assert not _passes(_run(code, name), codebank.CHECKS[name])


@pytest.mark.parametrize("name", ALL)
def test_truncated_answer_is_cut_mid_function(name: str) -> None:
    answer, natural = codebank.answer(name, "truncated")
    assert not natural
    assert not answer.rstrip().endswith("```")
    code = answer.removeprefix("```python\n")
    assert f"def {name}(" in code
    with pytest.raises(SyntaxError):
        compile(code, "<answer>", "exec")


def test_eval_style_prompts_name_their_function() -> None:
    prompt = "Write a Python function `merge_sorted(a, b)` that merges. Return only the code in a ```python block."
    assert codebank.find_function(prompt) == "merge_sorted"
    assert codebank.find_function("Complete this:\ndef second_largest(nums):\n    ...") == "second_largest"
    assert codebank.find_function("Implement `fib` please") == "fib"
    assert codebank.find_function("Write `quicksort(xs)`") is None


@pytest.mark.parametrize(("wrong", "truncated"), [(0.25, 0.0), (0.0, 0.5), (0.125, 0.125), (1.0, 0.0)])
def test_quality_fractions_pick_exactly_that_share_of_the_bank(wrong: float, truncated: float) -> None:
    variants = [codebank.variant_for(n, 3, wrong, truncated) for n in ALL]
    assert variants.count("wrong") == round(wrong * 24)
    assert variants.count("truncated") == round(truncated * 24)


def test_quality_choice_depends_on_the_seed_only() -> None:
    first = [codebank.variant_for(n, 1, 0.25, 0.0) for n in ALL]
    assert first == [codebank.variant_for(n, 1, 0.25, 0.0) for n in ALL]
    assert first != [codebank.variant_for(n, 2, 0.25, 0.0) for n in ALL]


def test_plan_answers_code_and_stops_or_fills_to_the_limit() -> None:
    quality = Quality(0, 0.0, 0.0)
    prompt = "Write a Python function `fib(n)` that returns the n-th Fibonacci number."
    job = plan(prompt, None, max_new_tokens=512, ignore_eos=False, quality=quality, streaming=False)
    assert job.kind == "code"
    assert job.finish_reason["type"] == "stop"
    assert "def fib(n):" in "".join(job.pieces)
    filled = plan(prompt, None, max_new_tokens=512, ignore_eos=True, quality=quality, streaming=False)
    assert len(filled.pieces) == 512
    assert filled.finish_reason == {"type": "length", "length": 512}
    chat = plan("How are you today?", None, max_new_tokens=33, ignore_eos=False, quality=quality, streaming=False)
    assert (len(chat.pieces), chat.kind) == (33, "chat")


def test_a_truncated_answer_finishes_with_length() -> None:
    quality = Quality(0, 0.0, 1.0)
    job = plan("Write `gcd(a, b)`.", None, max_new_tokens=512, ignore_eos=False, quality=quality, streaming=False)
    assert job.finish_reason["type"] == "length"
    assert "```" not in "".join(job.pieces)[3:]


def test_tokenizer_round_trips_and_counts_about_four_chars_per_token() -> None:
    sample = "Write a Python function `is_palindrome(s)` that ignores case.\n\n  Done! ünïcode"
    assert "".join(text.pieces(sample)) == sample
    assert len(sample) / 6 < text.count_tokens(sample) < len(sample) / 2
    assert text.encode(sample) == text.encode(sample)
    assert all(0 <= i < text.VOCAB_SIZE for i in text.encode(sample))


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("Write a Python function `fib(n)`.", "code"),
        ("Fix the bug in this code:\n```\nx = 1\n```", "code"),
        ("Solve for x: 3x + 4 = 19", "math"),
        ("How many apples are left if I eat 3 of 12?", "math"),
        ("Tell me a story about a lighthouse keeper.", "chat"),
    ],
)
def test_prompt_kinds(prompt: str, kind: str) -> None:
    assert text.classify(prompt) == kind
