"""The sim counts tokens with the served model's tokenizer, as SGLang does (tokenizer_manager.py), so a client's own
tokenizer (SGLang's benchmark retokenizes prompts and outputs) agrees with the server's counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from specgate_sim import testing, text
from transformers import AutoTokenizer

PROMPT_1718 = ("The quick brown fox jumps over the lazy dog while the bakery opens at nine. " * 23)[:1718]
UNICODE_PROMPT = "Grüße aus Köln — naïve café, 東京 ✓"


def _start(tmp_path: Path, args: list[str]) -> testing.SimProcess:
    proc = testing.start(args, log_path=tmp_path / "sim.log")
    proc.wait_ready()
    return proc


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return testing.write_model_dir(tmp_path_factory.mktemp("models") / "target", testing.TARGET_CONFIG)


@pytest.fixture(scope="module")
def sim(target: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    drafter = testing.write_model_dir(tmp_path_factory.mktemp("drafter"), testing.drafter_config(8))
    args = ["--model-path", str(target), "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path"]
    proc = _start(tmp_path_factory.mktemp("log"), [*args, str(drafter)])
    try:
        yield proc
    finally:
        proc.stop()


def _generate(sim: testing.SimProcess, prompt: str, max_new_tokens: int) -> dict:
    body = {"text": prompt, "sampling_params": {"max_new_tokens": max_new_tokens, "ignore_eos": True}}
    resp = httpx.post(sim.url + "/generate", json=body, timeout=30)
    resp.raise_for_status()
    return resp.json()


def test_prompt_tokens_are_what_the_models_tokenizer_makes_of_the_prompt(sim, target) -> None:
    # what SGLang's get_tokenizer loads (transformers' fast tokenizer over the model's tokenizer.json)
    tokenizer = AutoTokenizer.from_pretrained(str(target))
    for prompt in (PROMPT_1718, UNICODE_PROMPT):
        meta = _generate(sim, prompt, 4)["meta_info"]
        assert meta["prompt_tokens"] == len(tokenizer(prompt)["input_ids"])
    # the fixture tokenizer is byte-level: the 1718-character prompt is 1718 tokens, not the toy rule's count
    assert _generate(sim, PROMPT_1718, 4)["meta_info"]["prompt_tokens"] == 1718 != text.count_tokens(PROMPT_1718)


def test_output_retokenizes_to_the_servers_own_count_and_ids(sim, target) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(target))
    for prompt, n in ((PROMPT_1718, 256), ("Write a Python function `gcd(a, b)`.", 512)):
        out = _generate(sim, prompt, n)
        ids = tokenizer(out["text"], add_special_tokens=False)["input_ids"]
        assert ids == out["output_ids"]
        assert len(ids) == out["meta_info"]["completion_tokens"] == n
        assert tokenizer.decode(out["output_ids"]) == out["text"]


def test_openai_usage_counts_with_the_same_tokenizer(sim, target) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(target))
    body = {"model": str(target), "prompt": PROMPT_1718, "max_tokens": 32}
    resp = httpx.post(sim.url + "/v1/completions", json=body, timeout=30).json()
    assert resp["usage"]["prompt_tokens"] == 1718
    assert len(tokenizer(resp["choices"][0]["text"], add_special_tokens=False)["input_ids"]) == 32
    info = httpx.get(sim.url + "/model_info").json()
    assert info["tokenizer_path"] == str(target)


def test_tokenizer_path_names_where_the_tokenizer_is(tmp_path, target) -> None:
    bare = testing.write_model_dir(tmp_path / "bare", testing.TARGET_CONFIG, tokenizer=False)
    proc = _start(tmp_path, ["--model-path", str(bare), "--tokenizer-path", str(target)])
    try:
        assert _generate(proc, PROMPT_1718, 2)["meta_info"]["prompt_tokens"] == 1718
        assert httpx.get(proc.url + "/server_info").json()["tokenizer_path"] == str(target)
    finally:
        proc.stop()


def test_a_model_without_a_tokenizer_falls_back_to_the_toy_rule_and_says_so(tmp_path) -> None:
    bare = testing.write_model_dir(tmp_path / "bare", testing.TARGET_CONFIG, tokenizer=False)
    proc = _start(tmp_path, ["--model-path", str(bare)])
    try:
        assert _generate(proc, PROMPT_1718, 2)["meta_info"]["prompt_tokens"] == text.count_tokens(PROMPT_1718)
    finally:
        proc.stop()
    assert "no tokenizer.json" in proc.log()
