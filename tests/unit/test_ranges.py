"""Range refusals name the one variable out of range, its value and what it must be; -e strings are numbers."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.ranges import first_range_refusal, range_refusal

RULES = {
    "a_workers": {"integer": True, "min": 1, "example": 8},
    "a_fraction": {"min": 0, "below": 1, "null": True, "means": "a fraction", "example": "0.1 for 10 %"},
    "a_speedup": {"above": 0, "null": True},
}


@pytest.mark.parametrize("value", [0.2, "0.2", " 0.5 ", 0, None])
def test_in_range_values_pass_also_as_the_strings_extra_vars_give(value):
    assert range_refusal("a_fraction", value, RULES["a_fraction"]) == ""


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("a_fraction", 1, "a_fraction is 1: it must be null or a number >= 0 and < 1 (a fraction), e.g. 0.1 for 10 %."),
        ("a_fraction", "abc", "a_fraction is 'abc' (not a number): it must be null or a number >= 0 and < 1"),
        ("a_fraction", True, "a_fraction is True (not a number)"),
        ("a_workers", 1.9, "a_workers is 1.9: it must be a whole number >= 1, e.g. 8."),
        ("a_workers", None, "a_workers is None (null): it must be a whole number >= 1"),
        ("a_workers", "nan", "a_workers is 'nan' (not a number)"),
        ("a_speedup", 0, "a_speedup is 0: it must be null or a number > 0."),
    ],
)
def test_an_out_of_range_value_is_named_with_what_it_must_be(name, value, said):
    assert range_refusal(name, value, RULES[name]).startswith(said)


def test_only_the_first_variable_out_of_range_is_named():
    refusal = first_range_refusal(RULES, [4, 2.0, -1])
    assert refusal.startswith("a_fraction is 2.0")
    assert "a_workers" not in refusal
    assert "a_speedup" not in refusal
    assert first_range_refusal(RULES, [4, "0.3", None]) == ""


def test_a_rule_with_an_unknown_key_or_a_value_count_off_is_a_bug_said_as_such():
    with pytest.raises(ValueError, match="unknown key"):
        range_refusal("x", 1, {"minimum": 1})
    with pytest.raises(ValueError, match="3 range rules but 2 values"):
        first_range_refusal(RULES, [1, 2])
