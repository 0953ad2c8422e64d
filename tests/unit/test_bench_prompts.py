"""Built-in prompt sets: sized to the request, true to their kind, reproducible; user JSONL read strictly."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.specgate.gate.bench_prompts import BUILTIN_SETS, USER_SET, build_prompt, load_user_prompts
from specgate_sim import text as simtext

pytestmark = pytest.mark.host



@pytest.mark.parametrize("set_name", BUILTIN_SETS)
@pytest.mark.parametrize("target", [64, 512, 8192])
def test_prompt_hits_the_requested_token_length_once_calibrated(set_name, target):
    """Calibrate chars/token on one probe (as the runner does against the server), then size prompts with it."""
    probe = build_prompt(set_name, 999, 1024, seed=1, chars_per_token=4.0).text
    cpt = len(probe) / simtext.count_tokens(probe)
    tokens = [
        simtext.count_tokens(build_prompt(set_name, i, target, seed=1, chars_per_token=cpt).text) for i in range(5)
    ]
    mean = sum(tokens) / len(tokens)
    assert abs(mean - target) / target < (0.10 if target > 100 else 0.6), tokens


@pytest.mark.parametrize("set_name", BUILTIN_SETS)
def test_every_prompt_of_a_set_reads_as_its_kind(set_name):
    """The sim classifies prompts like a drafter's acceptance differs: code, math, chat must stay apart."""
    kinds = {
        simtext.classify(build_prompt(set_name, i, t, seed=7, chars_per_token=4.0).text)
        for i in range(20)
        for t in (64, 2048)
    }
    assert kinds == {set_name}


def test_same_seed_same_prompt_other_index_other_prompt():
    a = build_prompt("code", 3, 512, seed=5, chars_per_token=4.0)
    assert a == build_prompt("code", 3, 512, seed=5, chars_per_token=4.0)
    assert a.text != build_prompt("code", 4, 512, seed=5, chars_per_token=4.0).text
    assert a.text != build_prompt("code", 3, 512, seed=6, chars_per_token=4.0).text


def test_unknown_set_and_bad_lengths_are_refused():
    with pytest.raises(ValueError, match="spec_gate_bench_sets"):
        build_prompt("poetry", 0, 100, seed=1, chars_per_token=4.0)
    with pytest.raises(ValueError, match="at least 1 token"):
        build_prompt("code", 0, 0, seed=1, chars_per_token=4.0)


def test_user_jsonl_reads_prompts_and_their_own_output_length():
    text = json.dumps({"prompt": "hello there"}) + "\n\n" + json.dumps({"prompt": "sum it", "max_tokens": 32}) + "\n"
    prompts = load_user_prompts(text, "traffic.jsonl")
    assert [(p.set, p.text, p.max_tokens, p.target_tokens) for p in prompts] == [
        (USER_SET, "hello there", None, None),
        (USER_SET, "sum it", 32, None),
    ]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "line 2 is not JSON"),
        ('{"text": "x"}', 'line 2 needs a non-empty string "prompt"'),
        ('{"prompt": "  "}', 'line 2 needs a non-empty string "prompt"'),
        ('{"prompt": "x", "max_tokens": 0}', '"max_tokens" must be a positive integer'),
        ('{"prompt": "x", "max_tokens": true}', '"max_tokens" must be a positive integer'),
    ],
)
def test_bad_user_jsonl_line_is_named_with_the_variable(line, fragment):
    with pytest.raises(ValueError, match="spec_gate_bench_user_prompts") as err:
        load_user_prompts('{"prompt": "fine"}\n' + line, "traffic.jsonl")
    assert fragment in str(err.value)


def test_empty_user_jsonl_is_refused():
    with pytest.raises(ValueError, match="holds no prompts"):
        load_user_prompts("\n\n", "traffic.jsonl")
