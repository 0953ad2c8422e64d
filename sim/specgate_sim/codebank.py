"""Answers to the coding-eval prompts: a correct, a subtly wrong and a truncated version per function.

``CHECKS`` holds the behaviour each correct implementation has (and each wrong one breaks); the
eval author can reuse them, and sim/README.md lists the signatures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from specgate_sim.text import stable_hash


@dataclass(frozen=True)
class Entry:
    signature: str
    semantics: str
    correct: str
    wrong: str


def _e(signature: str, semantics: str, correct: str, wrong: str) -> Entry:
    return Entry(signature, semantics, correct.strip("\n"), wrong.strip("\n"))


BANK: dict[str, Entry] = {
    "is_palindrome": _e(
        "is_palindrome(s: str) -> bool",
        "True if s reads the same backwards, ignoring case and non-alphanumeric characters",
        """
def is_palindrome(s):
    cleaned = [c.lower() for c in s if c.isalnum()]
    return cleaned == cleaned[::-1]
""",
        """
def is_palindrome(s):
    cleaned = [c for c in s if c.isalnum()]
    return cleaned == cleaned[::-1]
""",
    ),
    "fib": _e(
        "fib(n: int) -> int",
        "n-th Fibonacci number, fib(0) == 0, fib(1) == 1",
        """
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""",
        """
def fib(n):
    a, b = 1, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""",
    ),
    "merge_sorted": _e(
        "merge_sorted(a: list, b: list) -> list",
        "one sorted list with every element of the sorted lists a and b (duplicates kept)",
        """
def merge_sorted(a, b):
    result = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            result.append(a[i])
            i += 1
        else:
            result.append(b[j])
            j += 1
    result.extend(a[i:])
    result.extend(b[j:])
    return result
""",
        """
def merge_sorted(a, b):
    result = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            result.append(a[i])
            i += 1
        else:
            result.append(b[j])
            j += 1
    result.extend(a[i:])
    return result
""",
    ),
    "word_count": _e(
        "word_count(text: str) -> dict[str, int]",
        "occurrences of each lowercase word; words are runs of letters, digits or apostrophes",
        """
import re


def word_count(text):
    counts = {}
    for word in re.findall(r"[a-z0-9']+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
""",
        """
import re


def word_count(text):
    counts = {}
    for word in re.findall(r"[A-Za-z0-9']+", text):
        counts[word] = counts.get(word, 0) + 1
    return counts
""",
    ),
    "gcd": _e(
        "gcd(a: int, b: int) -> int",
        "greatest common divisor, never negative; gcd(0, 0) == 0",
        """
def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a
""",
        """
def gcd(a, b):
    while b:
        a, b = b, a % b
    return a
""",
    ),
    "factorial": _e(
        "factorial(n: int) -> int",
        "n! with factorial(0) == 1; ValueError for negative n",
        """
def factorial(n):
    if n < 0:
        raise ValueError("n must be non-negative")
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result
""",
        """
def factorial(n):
    if n < 0:
        raise ValueError("n must be non-negative")
    result = 1
    for k in range(2, n):
        result *= k
    return result
""",
    ),
    "is_prime": _e(
        "is_prime(n: int) -> bool",
        "True for primes; False for n < 2",
        """
def is_prime(n):
    if n < 2:
        return False
    k = 2
    while k * k <= n:
        if n % k == 0:
            return False
        k += 1
    return True
""",
        """
def is_prime(n):
    if n < 2:
        return False
    k = 2
    while k * k < n:
        if n % k == 0:
            return False
        k += 1
    return True
""",
    ),
    "reverse_words": _e(
        "reverse_words(s: str) -> str",
        "the whitespace-separated words of s in reverse order, joined by single spaces",
        """
def reverse_words(s):
    return " ".join(reversed(s.split()))
""",
        """
def reverse_words(s):
    return " ".join(reversed(s.split(" ")))
""",
    ),
    "flatten": _e(
        "flatten(lst: list) -> list",
        "the non-list items of an arbitrarily nested list, in order (tuples are items)",
        """
def flatten(lst):
    result = []
    for item in lst:
        if isinstance(item, list):
            result.extend(flatten(item))
        else:
            result.append(item)
    return result
""",
        """
def flatten(lst):
    result = []
    for item in lst:
        if isinstance(item, list):
            result.extend(item)
        else:
            result.append(item)
    return result
""",
    ),
    "chunk": _e(
        "chunk(lst: list, n: int) -> list[list]",
        "consecutive pieces of length n, the last one shorter if needed; ValueError if n < 1",
        """
def chunk(lst, n):
    if n < 1:
        raise ValueError("n must be positive")
    return [lst[i:i + n] for i in range(0, len(lst), n)]
""",
        """
def chunk(lst, n):
    if n < 1:
        raise ValueError("n must be positive")
    return [lst[i:i + n] for i in range(0, len(lst) - n + 1, n)]
""",
    ),
    "count_vowels": _e(
        "count_vowels(s: str) -> int",
        "number of a, e, i, o, u in s, either case (y is not a vowel)",
        """
def count_vowels(s):
    return sum(1 for c in s.lower() if c in "aeiou")
""",
        """
def count_vowels(s):
    return sum(1 for c in s if c in "aeiou")
""",
    ),
    "max_subarray": _e(
        "max_subarray(nums: list[int]) -> int",
        "largest sum of a non-empty contiguous slice; ValueError for an empty list",
        """
def max_subarray(nums):
    if not nums:
        raise ValueError("empty list")
    best = current = nums[0]
    for x in nums[1:]:
        current = max(x, current + x)
        best = max(best, current)
    return best
""",
        """
def max_subarray(nums):
    if not nums:
        raise ValueError("empty list")
    best = current = 0
    for x in nums:
        current = max(x, current + x)
        best = max(best, current)
    return best
""",
    ),
    "binary_search": _e(
        "binary_search(arr: list, target) -> int",
        "an index of target in the ascending list arr, or -1",
        """
def binary_search(arr, target):
    lo, hi = 0, len(arr) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if arr[mid] == target:
            return mid
        if arr[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
""",
        """
def binary_search(arr, target):
    lo, hi = 0, len(arr) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if arr[mid] == target:
            return mid
        if arr[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
""",
    ),
    "two_sum": _e(
        "two_sum(nums: list[int], target: int) -> tuple[int, int] | None",
        "indices (i, j), i < j, with nums[i] + nums[j] == target, smallest j first; None if none",
        """
def two_sum(nums, target):
    seen = {}
    for j, x in enumerate(nums):
        if target - x in seen:
            return (seen[target - x], j)
        seen.setdefault(x, j)
    return None
""",
        """
def two_sum(nums, target):
    seen = {}
    for j, x in enumerate(nums):
        seen.setdefault(x, j)
        if target - x in seen:
            return (seen[target - x], j)
    return None
""",
    ),
    "rotate_list": _e(
        "rotate_list(lst: list, k: int) -> list",
        "lst rotated right by k (k may exceed len(lst); negative k rotates left); [] stays []",
        """
def rotate_list(lst, k):
    if not lst:
        return []
    k %= len(lst)
    return lst[-k:] + lst[:-k]
""",
        """
def rotate_list(lst, k):
    if not lst:
        return []
    k %= len(lst)
    return lst[k:] + lst[:k]
""",
    ),
    "unique_sorted": _e(
        "unique_sorted(lst: list) -> list",
        "the distinct values of lst in ascending order",
        """
def unique_sorted(lst):
    return sorted(set(lst))
""",
        """
def unique_sorted(lst):
    return list(dict.fromkeys(lst))
""",
    ),
    "transpose": _e(
        "transpose(matrix: list[list]) -> list[list]",
        "rows become columns, as lists; transpose([]) == []",
        """
def transpose(matrix):
    return [list(row) for row in zip(*matrix)]
""",
        """
def transpose(matrix):
    return list(zip(*matrix))
""",
    ),
    "run_length_encode": _e(
        "run_length_encode(s: str) -> list[tuple[str, int]]",
        'runs of equal characters: "aaab" -> [("a", 3), ("b", 1)]; "" -> []',
        """
def run_length_encode(s):
    runs = []
    for c in s:
        if runs and runs[-1][0] == c:
            runs[-1] = (c, runs[-1][1] + 1)
        else:
            runs.append((c, 1))
    return runs
""",
        """
def run_length_encode(s):
    runs = []
    count = 0
    for i, c in enumerate(s):
        if i and s[i - 1] != c:
            runs.append((s[i - 1], count))
            count = 0
        count += 1
    return runs
""",
    ),
    "anagram_groups": _e(
        "anagram_groups(words: list[str]) -> list[list[str]]",
        "words grouped by equal sorted letters (case-sensitive); groups in order of first appearance, "
        "words in input order",
        """
def anagram_groups(words):
    groups = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return list(groups.values())
""",
        """
def anagram_groups(words):
    groups = {}
    for word in words:
        groups.setdefault("".join(sorted(word)), []).append(word)
    return [sorted(group) for group in groups.values()]
""",
    ),
    "celsius_to_fahrenheit": _e(
        "celsius_to_fahrenheit(c: float) -> float",
        "c * 9 / 5 + 32",
        """
def celsius_to_fahrenheit(c):
    return c * 9 / 5 + 32
""",
        """
def celsius_to_fahrenheit(c):
    return c * 5 / 9 + 32
""",
    ),
    "lcm": _e(
        "lcm(a: int, b: int) -> int",
        "least common multiple, never negative; lcm(0, x) == 0",
        """
import math


def lcm(a, b):
    if a == 0 or b == 0:
        return 0
    return abs(a * b) // math.gcd(a, b)
""",
        """
import math


def lcm(a, b):
    if a == 0 or b == 0:
        return 0
    return a * b // math.gcd(a, b)
""",
    ),
    "digits_sum": _e(
        "digits_sum(n: int) -> int",
        "sum of the decimal digits of abs(n)",
        """
def digits_sum(n):
    return sum(int(d) for d in str(abs(n)))
""",
        """
def digits_sum(n):
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
""",
    ),
    "balanced_parens": _e(
        "balanced_parens(s: str) -> bool",
        "True if (), [] and {} are balanced and properly nested; other characters are ignored",
        """
def balanced_parens(s):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for c in s:
        if c in "([{":
            stack.append(c)
        elif c in pairs:
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack
""",
        """
def balanced_parens(s):
    depth = 0
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0
""",
    ),
    "second_largest": _e(
        "second_largest(nums: list[int]) -> int | None",
        "the second largest distinct value; None if there are fewer than two distinct values",
        """
def second_largest(nums):
    distinct = sorted(set(nums))
    return distinct[-2] if len(distinct) >= 2 else None
""",
        """
def second_largest(nums):
    ordered = sorted(nums)
    return ordered[-2] if len(ordered) >= 2 else None
""",
    ),
}

# (arguments, expected result) pairs; "raises" marks a ValueError.
CHECKS: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "is_palindrome": [(("A man, a plan, a canal: Panama",), True), (("hello",), False), (("",), True)],
    "fib": [((0,), 0), ((1,), 1), ((10,), 55)],
    "merge_sorted": [(([1, 3, 5], [2, 4, 6, 8]), [1, 2, 3, 4, 5, 6, 8]), (([], [1]), [1])],
    "word_count": [(("The cat and the hat",), {"the": 2, "cat": 1, "and": 1, "hat": 1})],
    "gcd": [((12, 18), 6), ((4, -6), 2), ((0, 0), 0)],
    "factorial": [((0,), 1), ((5,), 120), ((-1,), "raises")],
    "is_prime": [((1,), False), ((2,), True), ((9,), False), ((25,), False), ((97,), True)],
    "reverse_words": [(("hello  big world",), "world big hello")],
    "flatten": [(([1, [2, [3, [4]]], (5,)],), [1, 2, 3, 4, (5,)])],
    "chunk": [(([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]), (([], 3), []), (([1], 0), "raises")],
    "count_vowels": [(("Hello World",), 3), (("AEIOUy",), 5)],
    "max_subarray": [(([-2, 1, -3, 4, -1, 2, 1, -5, 4],), 6), (([-3, -1, -2],), -1), (([],), "raises")],
    "binary_search": [(([1, 3, 5, 7], 7), 3), (([1, 3, 5, 7], 1), 0), (([1, 3, 5, 7], 4), -1)],
    "two_sum": [(([3, 2, 4], 6), (1, 2)), (([1, 2], 7), None)],
    "rotate_list": [(([1, 2, 3, 4, 5], 2), [4, 5, 1, 2, 3]), (([1, 2, 3], -1), [2, 3, 1]), (([], 3), [])],
    "unique_sorted": [(([3, 1, 2, 3, 1],), [1, 2, 3])],
    "transpose": [(([[1, 2, 3], [4, 5, 6]],), [[1, 4], [2, 5], [3, 6]]), (([],), [])],
    "run_length_encode": [(("aaab",), [("a", 3), ("b", 1)]), (("",), [])],
    "anagram_groups": [((["tea", "eat", "bat", "ate", "tab"],), [["tea", "eat", "ate"], ["bat", "tab"]])],
    "celsius_to_fahrenheit": [((100,), 212.0), ((0,), 32.0), ((-40,), -40.0)],
    "lcm": [((4, 6), 12), ((-4, 6), 12), ((0, 5), 0)],
    "digits_sum": [((1234,), 10), ((-56,), 11), ((0,), 0)],
    "balanced_parens": [(("([]{})",), True), (("([)]",), False), (("(()",), False)],
    "second_largest": [(([5, 5, 4, 3],), 4), (([7, 7],), None), (([1, 9, 3],), 3)],
}

_NAME_PATTERNS = (re.compile(r"`(\w+)\s*\("), re.compile(r"\bdef\s+(\w+)\s*\("), re.compile(r"`(\w+)`"))


def find_function(prompt: str) -> str | None:
    """The coding-eval function a prompt asks for, if the sim knows it."""
    for pattern in _NAME_PATTERNS:
        for name in pattern.findall(prompt):
            if name in BANK:
                return name
    return None


def variant_for(name: str, seed: int, wrong_fraction: float, truncate_fraction: float) -> str:
    """ "correct", "wrong" or "truncated": exactly round(fraction * 24) names of the bank are picked
    for each bad variant, in an order fixed by the seed, so a fraction means what it says."""
    order = sorted(BANK, key=lambda n: stable_hash(seed, "quality", n))
    n_wrong = round(max(0.0, min(1.0, wrong_fraction)) * len(order))
    n_trunc = round(max(0.0, min(1.0, truncate_fraction)) * len(order))
    rank = order.index(name)
    if rank < n_wrong:
        return "wrong"
    if rank < n_wrong + n_trunc:
        return "truncated"
    return "correct"


def answer(name: str, variant: str) -> tuple[str, bool]:
    """Response text and whether it ends naturally (False: cut off, as when max tokens hit)."""
    entry = BANK[name]
    if variant == "wrong":
        return f"```python\n{entry.wrong}\n```", True
    if variant == "truncated":
        # cut right after a block opener past the function header: the code cannot compile, as when a
        # max-tokens limit strikes mid-function (a cut after a complete statement could loop forever)
        lines = entry.correct.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("def "))
        middle = max(header, (header + len(lines)) // 2)
        cut = max(i for i in range(header, middle + 1) if lines[i].rstrip().endswith(":"))
        return "```python\n" + "\n".join(lines[: cut + 1]) + "\n", False
    return f"```python\n{entry.correct}\n```", True
