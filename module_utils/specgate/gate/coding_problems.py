"""The coding-correctness eval: small problems, each a prompt a model can answer and asserts that judge it.

Each prompt names the function in backticks and states its exact semantics, so a real model can answer
without guessing and the asserts test only what was asked. The first five are the field notes' eval.
"""

from __future__ import annotations

from dataclasses import dataclass

_SUFFIX = "Return only the code in a ```python block."


@dataclass(frozen=True)
class Problem:
    name: str
    signature: str
    task: str
    asserts: tuple[str, ...]

    @property
    def prompt(self) -> str:
        return f"Write a Python function `{self.signature}` that {self.task} {_SUFFIX}"


PROBLEMS: tuple[Problem, ...] = (
    Problem(
        "is_palindrome",
        "is_palindrome(s)",
        "returns True if the string s reads the same forwards and backwards when only its letters and digits "
        "are kept and case is ignored, else False. The empty string is a palindrome.",
        (
            "is_palindrome('A man, a plan, a canal: Panama') is True",
            "is_palindrome('hello') is False",
            "is_palindrome('') is True",
            "is_palindrome('Aa') is True",
            "is_palindrome('ab1') is False",
        ),
    ),
    Problem(
        "fib",
        "fib(n)",
        "returns the n-th Fibonacci number for an integer n >= 0, with fib(0) = 0 and fib(1) = 1. "
        "It must be fast for n up to 90.",
        ("fib(0) == 0", "fib(1) == 1", "fib(2) == 1", "fib(10) == 55", "fib(90) == 2880067194370816120"),
    ),
    Problem(
        "merge_sorted",
        "merge_sorted(a, b)",
        "takes two lists a and b, each sorted ascending, and returns one new ascending list with every "
        "element of both, duplicates kept.",
        (
            "merge_sorted([1, 3, 5], [2, 4, 6, 8]) == [1, 2, 3, 4, 5, 6, 8]",
            "merge_sorted([], []) == []",
            "merge_sorted([1, 1], [1]) == [1, 1, 1]",
            "merge_sorted([], [1]) == [1]",
            "merge_sorted([2], []) == [2]",
        ),
    ),
    Problem(
        "word_count",
        "word_count(text)",
        "returns a dict mapping each word of the string text to how often it occurs. Lowercase the text "
        "first; words are maximal runs of letters, digits or apostrophes, everything else separates them.",
        (
            "word_count('The cat and the hat') == {'the': 2, 'cat': 1, 'and': 1, 'hat': 1}",
            "word_count('') == {}",
            "word_count(\"Don't stop, don't!\") == {\"don't\": 2, 'stop': 1}",
        ),
    ),
    Problem(
        "gcd",
        "gcd(a, b)",
        "returns the greatest common divisor of the integers a and b (either may be negative or zero); the "
        "result is never negative and gcd(0, 0) = 0.",
        ("gcd(12, 18) == 6", "gcd(4, -6) == 2", "gcd(0, 5) == 5", "gcd(0, 0) == 0", "gcd(17, 13) == 1"),
    ),
    Problem(
        "factorial",
        "factorial(n)",
        "returns n! for an integer n >= 0 (factorial(0) = 1) and raises ValueError for negative n.",
        (
            "factorial(0) == 1",
            "factorial(5) == 120",
            "factorial(20) == 2432902008176640000",
            "__raises(ValueError, factorial, -1)",
        ),
    ),
    Problem(
        "is_prime",
        "is_prime(n)",
        "returns True if the integer n is a prime number, else False; numbers below 2 are not prime.",
        (
            "is_prime(2) is True",
            "is_prime(1) is False",
            "is_prime(-7) is False",
            "is_prime(9) is False",
            "is_prime(25) is False",
            "is_prime(97) is True",
            "is_prime(7919) is True",
        ),
    ),
    Problem(
        "reverse_words",
        "reverse_words(s)",
        "returns the words of the string s (separated by any whitespace) in reverse order, joined by single "
        "spaces, with no leading or trailing space.",
        (
            "reverse_words('hello  big world') == 'world big hello'",
            "reverse_words('  a  b c ') == 'c b a'",
            "reverse_words('') == ''",
        ),
    ),
    Problem(
        "flatten",
        "flatten(lst)",
        "takes a list whose elements may be lists nested to any depth and returns a flat list of the "
        "non-list elements in left-to-right order; tuples and other values are elements, not lists.",
        (
            "flatten([1, [2, [3, [4]]], (5,)]) == [1, 2, 3, 4, (5,)]",
            "flatten([]) == []",
            "flatten([[], [[]]]) == []",
            "flatten(['a', ['b']]) == ['a', 'b']",
        ),
    ),
    Problem(
        "chunk",
        "chunk(lst, n)",
        "splits the list lst into consecutive lists of length n (the last may be shorter) and returns the "
        "list of them; it raises ValueError if n < 1.",
        (
            "chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]",
            "chunk([], 3) == []",
            "chunk([1, 2, 3], 3) == [[1, 2, 3]]",
            "__raises(ValueError, chunk, [1], 0)",
        ),
    ),
    Problem(
        "count_vowels",
        "count_vowels(s)",
        "returns how many characters of the string s are vowels a, e, i, o, u in either case (y is not a vowel).",
        ("count_vowels('Hello World') == 3", "count_vowels('') == 0", "count_vowels('AEIOUy') == 5"),
    ),
    Problem(
        "max_subarray",
        "max_subarray(nums)",
        "returns the largest sum of a non-empty contiguous slice of the list of integers nums, and raises "
        "ValueError for an empty list.",
        (
            "max_subarray([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6",
            "max_subarray([-3, -1, -2]) == -1",
            "max_subarray([5]) == 5",
            "__raises(ValueError, max_subarray, [])",
        ),
    ),
    Problem(
        "binary_search",
        "binary_search(arr, target)",
        "returns an index of target in the ascending list arr, or -1 if it is absent, in O(log n) steps.",
        (
            "binary_search([1, 3, 5, 7], 7) == 3",
            "binary_search([1, 3, 5, 7], 1) == 0",
            "binary_search([1, 3, 5, 7], 4) == -1",
            "binary_search([], 1) == -1",
            "binary_search([2], 2) == 0",
        ),
    ),
    Problem(
        "two_sum",
        "two_sum(nums, target)",
        "returns a tuple (i, j) of indices with i < j and nums[i] + nums[j] == target, choosing the pair with "
        "the smallest j (and for that j the smallest i), or None if no pair exists.",
        (
            "two_sum([2, 7, 11, 15], 9) == (0, 1)",
            "two_sum([3, 2, 4], 6) == (1, 2)",
            "two_sum([3, 3], 6) == (0, 1)",
            "two_sum([1, 2], 7) is None",
        ),
    ),
    Problem(
        "rotate_list",
        "rotate_list(lst, k)",
        "returns a new list with the elements of lst rotated right by k positions; k may exceed the length, "
        "a negative k rotates left, and an empty list stays empty.",
        (
            "rotate_list([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]",
            "rotate_list([1, 2, 3], 3) == [1, 2, 3]",
            "rotate_list([1, 2, 3], 4) == [3, 1, 2]",
            "rotate_list([1, 2, 3], -1) == [2, 3, 1]",
            "rotate_list([], 5) == []",
        ),
    ),
    Problem(
        "unique_sorted",
        "unique_sorted(lst)",
        "returns the distinct values of the list lst sorted ascending.",
        ("unique_sorted([3, 1, 2, 3, 1]) == [1, 2, 3]", "unique_sorted([]) == []", "unique_sorted([5, 5]) == [5]"),
    ),
    Problem(
        "transpose",
        "transpose(matrix)",
        "returns the transpose of a rectangular matrix given as a list of equal-length row lists, as a list "
        "of lists; transpose([]) == [].",
        (
            "transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]",
            "transpose([]) == []",
            "transpose([[1]]) == [[1]]",
        ),
    ),
    Problem(
        "run_length_encode",
        "run_length_encode(s)",
        "returns the run-length encoding of the string s as a list of (character, count) tuples in order, "
        "e.g. 'aaab' gives [('a', 3), ('b', 1)]; the empty string gives [].",
        (
            "run_length_encode('aaabcc') == [('a', 3), ('b', 1), ('c', 2)]",
            "run_length_encode('') == []",
            "run_length_encode('aaab') == [('a', 3), ('b', 1)]",
            "run_length_encode('abA') == [('a', 1), ('b', 1), ('A', 1)]",
        ),
    ),
    Problem(
        "anagram_groups",
        "anagram_groups(words)",
        "groups the list of strings words into anagram groups (same letters, case-sensitive) and returns a "
        "list of the groups, each a list of its words in input order, the groups in order of first appearance.",
        (
            "anagram_groups(['tea', 'eat', 'bat', 'ate', 'tab']) == [['tea', 'eat', 'ate'], ['bat', 'tab']]",
            "anagram_groups([]) == []",
            "anagram_groups(['ab', 'Ba']) == [['ab'], ['Ba']]",
        ),
    ),
    Problem(
        "celsius_to_fahrenheit",
        "celsius_to_fahrenheit(c)",
        "converts a temperature c in degrees Celsius to degrees Fahrenheit (F = C * 9 / 5 + 32).",
        (
            "celsius_to_fahrenheit(0) == 32",
            "celsius_to_fahrenheit(100) == 212",
            "abs(celsius_to_fahrenheit(-40) + 40) < 1e-9",
            "abs(celsius_to_fahrenheit(37) - 98.6) < 1e-9",
        ),
    ),
    Problem(
        "lcm",
        "lcm(a, b)",
        "returns the least common multiple of the integers a and b; it is never negative and lcm(0, x) = 0.",
        ("lcm(4, 6) == 12", "lcm(-4, 6) == 12", "lcm(0, 5) == 0", "lcm(7, 3) == 21", "lcm(5, 5) == 5"),
    ),
    Problem(
        "digits_sum",
        "digits_sum(n)",
        "returns the sum of the decimal digits of the integer n, ignoring its sign.",
        ("digits_sum(12345) == 15", "digits_sum(0) == 0", "digits_sum(-907) == 16"),
    ),
    Problem(
        "balanced_parens",
        "balanced_parens(s)",
        "returns True if the brackets (), [] and {} in the string s are balanced and properly nested, ignoring "
        "every other character, else False.",
        (
            "balanced_parens('([]{})') is True",
            "balanced_parens('([)]') is False",
            "balanced_parens('') is True",
            "balanced_parens('a(b)c') is True",
            "balanced_parens('(()') is False",
            "balanced_parens(')(') is False",
        ),
    ),
    Problem(
        "second_largest",
        "second_largest(nums)",
        "returns the second largest distinct value of the list of numbers nums, or None if there are fewer "
        "than two distinct values.",
        (
            "second_largest([5, 5, 4, 3]) == 4",
            "second_largest([7, 7]) is None",
            "second_largest([]) is None",
            "second_largest([-1, -2]) == -2",
        ),
    ),
)

PROBLEMS_BY_NAME: dict[str, Problem] = {p.name: p for p in PROBLEMS}


def select_problems(names: list[str] | None) -> list[Problem]:
    """All problems, or the named ones in the given order."""
    if not names:
        return list(PROBLEMS)
    unknown = [n for n in names if n not in PROBLEMS_BY_NAME]
    if unknown:
        raise ValueError(
            f"spec_gate_bench_eval_problems names unknown problems: {', '.join(unknown)}; "
            f"known: {', '.join(PROBLEMS_BY_NAME)}"
        )
    return [PROBLEMS_BY_NAME[n] for n in names]
