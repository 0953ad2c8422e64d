"""A setting's range, judged one variable at a time so a refusal names the one value that is out of it.

A rule is a mapping: ``min`` / ``max`` (bounds), ``above`` / ``below`` (exclusive bounds), ``integer`` (a whole
number), ``null`` (null allowed), ``means`` (what the number is, said in the refusal), ``example`` (a good value).
Values from ``-e name=value`` arrive as strings: a string that reads as a number is that number; anything else
(a word, a boolean, a list) is refused as not a number, never read as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

RULE_KEYS = frozenset({"min", "max", "above", "below", "integer", "null", "means", "example"})


def as_number(value: Any) -> float | None:
    """``value`` as a number, or None when it is none (booleans are not numbers, NaN is not a value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return None if math.isnan(number) else number


def _requirement(rule: Mapping[str, Any]) -> str:
    kind = "a whole number" if rule.get("integer") else "a number"
    bounds = []
    if "min" in rule:
        bounds.append(f">= {rule['min']}")
    if "above" in rule:
        bounds.append(f"> {rule['above']}")
    if "max" in rule:
        bounds.append(f"<= {rule['max']}")
    if "below" in rule:
        bounds.append(f"< {rule['below']}")
    text = f"{kind} {' and '.join(bounds)}".rstrip()
    if rule.get("null"):
        text = f"null or {text}"
    if rule.get("means"):
        text += f" ({rule['means']})"
    return text


def range_refusal(name: str, value: Any, rule: Mapping[str, Any]) -> str:
    """'' when ``value`` is in ``rule``'s range, else one sentence naming ``name``, its value and what it must be."""
    unknown = set(rule) - RULE_KEYS
    if unknown:
        raise ValueError(f"range rule for {name}: unknown key(s) {', '.join(sorted(unknown))}")
    if value is None and rule.get("null"):
        return ""
    number = as_number(value)
    fix = f", e.g. {rule['example']}" if "example" in rule else ""
    shown = repr(value) if isinstance(value, str) else value
    if number is None:
        why = "null" if value is None else "not a number"
        return f"{name} is {shown} ({why}): it must be {_requirement(rule)}{fix}."
    fails = (
        (rule.get("integer") and not number.is_integer())
        or ("min" in rule and number < rule["min"])
        or ("max" in rule and number > rule["max"])
        or ("above" in rule and number <= rule["above"])
        or ("below" in rule and number >= rule["below"])
    )
    return f"{name} is {shown}: it must be {_requirement(rule)}{fix}." if fails else ""


def first_range_refusal(rules: Mapping[str, Mapping[str, Any]], values: Sequence[Any]) -> str:
    """The refusal of the first variable of ``rules`` (in order) whose value in ``values`` (same order) is out of
    range, or ''."""
    if len(values) != len(rules):
        raise ValueError(f"{len(rules)} range rules but {len(values)} values")
    for (name, rule), value in zip(rules.items(), values, strict=True):
        refusal = range_refusal(name, value, rule)
        if refusal:
            return refusal
    return ""
