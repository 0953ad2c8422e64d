"""Prompt sets for the benchmark: built-in code, math and chat-like prompts of a requested token length, and a
user-supplied JSONL of real traffic.

Acceptance depends on what is asked (code and math accept far more drafted tokens than open chat), so each
set keeps to its kind all the way: the long-context filler of a code prompt is code, of a math prompt
numbers and word problems, of a chat prompt conversation. Nothing is downloaded; text is generated from a
seed, so the same seed gives the same prompts on every host.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

BUILTIN_SETS = ("code", "math", "chat")
USER_SET = "user"
NATIVE_CONTEXT = "native"  # the user set runs its prompts as they are, at their own length

_IDENTS = ("records", "orders", "users", "events", "prices", "tasks", "nodes", "files", "rows", "items", "jobs")
_VERBS = ("load", "parse", "merge", "filter", "group", "index", "validate", "normalize", "score", "render")
_CODE_TASKS = (
    "Write a Python function that reads a CSV file of {a} and returns the {b} grouped by their status, with tests.",
    "Implement a Python class that caches {a} in memory with a maximum size and least-recently-used eviction.",
    "Refactor the code above so that `{v}_{a}` streams its input instead of loading everything; keep the API.",
    "Find the bug in `{v}_{a}` above and write a fixed version of the function with a short explanation.",
    "Write a Python command-line tool with argparse that can {v} {a} from a JSON file and print a summary.",
)
_TOPICS = ("a bakery", "a cycling club", "a library", "a small farm", "a train line", "a school fair", "a warehouse")
_MATH_TASKS = (
    "Solve step by step: {n1} workers finish a job in {n2} days. How many days do {n3} workers need?",
    "Compute the sum of all integers from {n1} to {n1_big} and show the formula you use.",
    "Solve the equation {n1}x + {n2} = {n3}x - {n4} and check the solution.",
    "A bag holds {n1} red and {n2} blue marbles. Calculate the probability of drawing two red marbles in a row.",
    "Prove that the sum of the first {n2} odd numbers equals {n2} squared, then compute it for {n3}.",
)
_CHAT_SUBJECTS = (
    "planning a week of hiking in the Alps",
    "learning to bake sourdough bread at home",
    "choosing a first camera for travel photos",
    "starting a vegetable garden on a balcony",
    "preparing for a job interview at a museum",
    "visiting Lisbon with two teenagers",
    "reading more novels in a busy month",
)
_CHAT_TASKS = (
    "Can you suggest a plan for {s}, and tell me what people usually get wrong?",
    "I am thinking about {s}. What would you recommend, and why?",
    "Give me friendly advice on {s}, with a few ideas I might not have heard of.",
)
_CHAT_LINES = (
    "That sounds lovely, I had not thought about the weather in the mountains.",
    "My friend said the early morning is the best time, is that really true?",
    "We tried something similar last year and it went well apart from the long queues.",
    "I would rather keep things simple and not spend too much on equipment.",
    "Thanks, that helps. I also wonder what to pack for rainy days.",
    "Honestly the hardest part for me is finding the time on weekdays.",
    "The guide book recommends the old town, but the reviews are mixed.",
)


@dataclass(frozen=True)
class Prompt:
    set: str
    index: int
    text: str
    target_tokens: int | None  # None: a user prompt taken as it is
    max_tokens: int | None = None  # a user prompt may carry its own output length


def _code_filler(rng: random.Random) -> str:
    a, v = rng.choice(_IDENTS), rng.choice(_VERBS)
    k = rng.randint(2, 9)
    return (
        f"def {v}_{a}(source, limit={k * 10}):\n"
        f'    """{v.capitalize()} {a} from source, at most limit of them."""\n'
        f"    result = []\n"
        f"    for position, entry in enumerate(source):\n"
        f"        if position >= limit:\n"
        f"            break\n"
        f"        if entry.get('{rng.choice(_IDENTS)}') is not None:\n"
        f"            result.append(entry)\n"
        f"    return result\n\n"
    )


def _math_filler(rng: random.Random) -> str:
    topic = rng.choice(_TOPICS)
    x, y, z = rng.randint(3, 90), rng.randint(2, 40), rng.randint(5, 500)
    return (
        f"In {topic} there are {x} boxes with {y} items each, and {z} items are sold every week. "
        f"So {x} * {y} = {x * y} items are in stock, and after one week {x * y} - {z} = {x * y - z} remain.\n"
    )


def _chat_filler(rng: random.Random) -> str:
    line = rng.choice(_CHAT_LINES)
    subject = rng.choice(_CHAT_SUBJECTS)
    return f"User: {line}\nAssistant: Good point. When it comes to {subject}, take it one step at a time.\n"


def _code_task(rng: random.Random) -> str:
    return rng.choice(_CODE_TASKS).format(a=rng.choice(_IDENTS), b=rng.choice(_IDENTS), v=rng.choice(_VERBS))


def _math_task(rng: random.Random) -> str:
    n1, n2, n3, n4 = rng.randint(2, 30), rng.randint(2, 30), rng.randint(31, 60), rng.randint(1, 20)
    return rng.choice(_MATH_TASKS).format(n1=n1, n2=n2, n3=n3, n4=n4, n1_big=n1 + rng.randint(50, 500))


def _chat_task(rng: random.Random) -> str:
    return rng.choice(_CHAT_TASKS).format(s=rng.choice(_CHAT_SUBJECTS))


_KINDS: dict[str, tuple[Callable[[random.Random], str], Callable[[random.Random], str], str]] = {
    "code": (_code_filler, _code_task, "Here is the code we have so far:\n\n"),
    "math": (_math_filler, _math_task, "Notes from the stock records:\n\n"),
    "chat": (_chat_filler, _chat_task, "Our conversation so far:\n\n"),
}


def build_prompt(set_name: str, index: int, target_tokens: int, seed: int, chars_per_token: float) -> Prompt:
    """A prompt of about ``target_tokens`` tokens (``chars_per_token`` from calibrating against the server's
    tokenizer); prompt ``index`` of a set differs from every other one so the prefix cache cannot help."""
    if set_name not in _KINDS:
        raise ValueError(
            f"unknown built-in prompt set {set_name!r}; spec_gate_bench_sets takes {', '.join(BUILTIN_SETS)}"
        )
    if target_tokens < 1:
        raise ValueError(f"a context length must be at least 1 token, got {target_tokens}")
    if chars_per_token <= 0:
        raise ValueError(f"chars_per_token must be positive, got {chars_per_token}")
    filler, task, intro = _KINDS[set_name]
    rng = random.Random(f"{seed}:{set_name}:{index}")
    question = task(rng)
    budget = int(target_tokens * chars_per_token) - len(question) - 2
    if budget <= len(intro) + 40:
        return Prompt(set_name, index, question, target_tokens)
    parts = [intro, f"(session {index}, ref {rng.randrange(10**6)})\n"]
    size = sum(len(p) for p in parts)
    while size < budget:
        piece = filler(rng)
        parts.append(piece)
        size += len(piece)
    body = "".join(parts)[:budget]
    return Prompt(set_name, index, f"{body}\n\n{question}", target_tokens)


def load_user_prompts(text: str, source: str) -> list[Prompt]:
    """Prompts from JSONL: one object per line with "prompt" (text) and optional "max_tokens" (int)."""
    prompts = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"spec_gate_bench_user_prompts ({source}) line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f'{where} is not JSON ({exc.msg}); each line must be like {{"prompt": "..."}}') from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str) or not obj["prompt"].strip():
            raise ValueError(f'{where} needs a non-empty string "prompt"; each line must be like {{"prompt": "..."}}')
        max_tokens = obj.get("max_tokens")
        if max_tokens is not None and (
            not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1
        ):
            raise ValueError(f'{where}: "max_tokens" must be a positive integer, got {max_tokens!r}')
        prompts.append(Prompt(USER_SET, len(prompts), obj["prompt"], None, max_tokens))
    if not prompts:
        raise ValueError(f"spec_gate_bench_user_prompts ({source}) holds no prompts")
    return prompts
