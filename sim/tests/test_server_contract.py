"""The sim speaks SGLang 0.5.23's HTTP contract: a real process on loopback, driven by real clients."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from specgate_sim import testing
from tokenizers import Tokenizer

CODE_PROMPT = (
    "Write a Python function `gcd(a, b)` that returns the greatest common divisor of the integers a and b. "
    "Return only the code in a ```python block."
)
CHAT_PROMPT = "Tell me about the weather in spring and why people like it."


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG, weight_bytes=4 << 20)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)
    return target, drafter


@pytest.fixture(scope="module")
def sim(models: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[testing.SimProcess]:
    target, drafter = models
    args = f"--model-path {target} --served-model-name kimi-k2.6 --speculative-algorithm DDTREE"
    args += f" --speculative-draft-model-path {drafter} --speculative-ddtree-budget 8 --speculative-eagle-topk 4"
    proc = testing.start(
        [*args.split(), "--enable-metrics"],
        log_path=tmp_path_factory.mktemp("log") / "sim.log",
        env={"SPECGATE_SIM_SEED": "11"},
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def _generate(sim: testing.SimProcess, body: dict) -> dict:
    resp = httpx.post(sim.url + "/generate", json=body, timeout=30)
    resp.raise_for_status()
    return resp.json()


def test_health_and_ready_answer_200_with_an_empty_body_once_up(sim: testing.SimProcess) -> None:
    for path in ("/health", "/health_generate", "/ready"):
        resp = httpx.get(sim.url + path)
        assert (resp.status_code, resp.content) == (200, b"")


def test_v1_models_lists_the_served_model_name_with_its_context_length(sim: testing.SimProcess) -> None:
    body = httpx.get(sim.url + "/v1/models").json()
    assert body["object"] == "list"
    (card,) = body["data"]
    assert (card["id"], card["owned_by"], card["max_model_len"]) == ("kimi-k2.6", "sglang", 262144)
    assert httpx.get(sim.url + "/v1/models/other").status_code == 404


def test_model_info_reports_path_name_and_architecture(sim: testing.SimProcess, models: tuple[Path, Path]) -> None:
    info = httpx.get(sim.url + "/model_info").json()
    assert info["model_path"] == str(models[0])
    assert info["served_model_name"] == "kimi-k2.6"
    assert info["architectures"] == ["DeepseekV3ForCausalLM"]
    assert info["is_generation"] is True


def test_server_info_reports_the_resolved_speculative_config(
    sim: testing.SimProcess, models: tuple[Path, Path]
) -> None:
    info = httpx.get(sim.url + "/server_info").json()
    assert info["model_path"] == str(models[0])
    assert info["speculative_algorithm"] == "DDTREE"
    assert info["speculative_draft_model_path"] == str(models[1])
    assert info["speculative_draft_model_revision"] == "main"
    assert info["speculative_dflash_block_size"] == 8  # from the drafter's dflash_config.block_size
    assert info["speculative_ddtree_budget"] == 8
    assert info["speculative_num_draft_tokens"] == 9  # budget + 1
    assert info["max_running_requests"] == 48  # DFLASH's default when unset
    assert info["version"] == "0.5.23"
    assert "--speculative-ddtree-budget 8" in info["launch_command"]
    assert isinstance(info["internal_states"], list)
    assert info["internal_states"][0]["speculative_algorithm"] == "DDTREE"


def test_generate_returns_code_and_speculative_meta_info(sim: testing.SimProcess) -> None:
    out = _generate(sim, {"text": CODE_PROMPT, "sampling_params": {"max_new_tokens": 256, "temperature": 0}})
    assert "def gcd(a, b):" in out["text"]
    assert out["text"].startswith("```python\n")
    meta = out["meta_info"]
    assert meta["finish_reason"]["type"] == "stop"
    assert meta["completion_tokens"] == len(out["output_ids"]) > 10
    assert meta["prompt_tokens"] > 10
    assert meta["spec_verify_ct"] > 0
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 8
    assert meta["spec_accept_rate"] == pytest.approx(meta["spec_num_correct_drafts"] / meta["spec_num_proposed_drafts"])
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]


def test_generate_honours_max_new_tokens_and_ignore_eos(sim: testing.SimProcess) -> None:
    out = _generate(sim, {"text": CODE_PROMPT, "sampling_params": {"max_new_tokens": 300, "ignore_eos": True}})
    assert out["meta_info"]["completion_tokens"] == 300
    assert out["meta_info"]["finish_reason"] == {"type": "length", "length": 300}
    short = _generate(sim, {"text": CHAT_PROMPT, "sampling_params": {"max_new_tokens": 7}})
    assert short["meta_info"]["completion_tokens"] == 7


def test_generate_accepts_input_ids(sim: testing.SimProcess) -> None:
    out = _generate(sim, {"input_ids": list(range(100, 164)), "sampling_params": {"max_new_tokens": 20}})
    assert out["meta_info"]["prompt_tokens"] == 64
    assert out["meta_info"]["completion_tokens"] == 20


def test_generate_streams_cumulative_sse_events_then_done(sim: testing.SimProcess) -> None:
    body = {"text": CHAT_PROMPT, "sampling_params": {"max_new_tokens": 64, "ignore_eos": True}, "stream": True}
    events = []
    with httpx.stream("POST", sim.url + "/generate", json=body, timeout=30) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(line[len("data: ") :])
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) > 3  # one per verify step, several tokens each
    texts = [c["text"] for c in chunks]
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    assert [c["meta_info"]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert chunks[-1]["meta_info"]["finish_reason"]["type"] == "length"
    assert chunks[-1]["meta_info"]["completion_tokens"] == 64


def test_openai_sdk_completions_and_spec_tokens_details(sim: testing.SimProcess) -> None:
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused")
    resp = client.completions.create(
        model="kimi-k2.6", prompt=CHAT_PROMPT, max_tokens=40, extra_body={"return_spec_tokens_details": True}
    )
    assert resp.object == "text_completion"
    assert resp.usage is not None
    assert resp.usage.completion_tokens == 40
    assert resp.choices[0].finish_reason == "length"
    details = (resp.model_extra or {})["sglext"]["spec_tokens_details"]
    assert details["spec_verify_ct"] > 0
    assert details["spec_accept_length"] == pytest.approx(40 / details["spec_verify_ct"])
    plain = client.completions.create(model="kimi-k2.6", prompt=CHAT_PROMPT, max_tokens=5)
    assert "sglext" not in (plain.model_extra or {})


def test_openai_sdk_chat_answers_the_coding_prompt(sim: testing.SimProcess) -> None:
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused")
    resp = client.chat.completions.create(
        model="kimi-k2.6",
        messages=[{"role": "user", "content": CODE_PROMPT}],
        max_tokens=512,
        extra_body={"return_spec_tokens_details": True},
    )
    assert resp.id.startswith("chatcmpl-")
    message = resp.choices[0].message
    assert message.role == "assistant"
    assert message.content is not None
    assert "def gcd(a, b):" in message.content
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert (resp.model_extra or {})["sglext"]["spec_tokens_details"]["spec_num_correct_drafts"] >= 0


def test_openai_sdk_chat_stream_with_usage_and_sglext(sim: testing.SimProcess, models: tuple[Path, Path]) -> None:
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused")
    stream = client.chat.completions.create(
        model="kimi-k2.6",
        messages=[{"role": "user", "content": CHAT_PROMPT}],
        max_tokens=50,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"return_spec_tokens_details": True},
    )
    content, usage, sglext, reasons = "", None, None, []
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            reasons.append(choice.finish_reason)
        usage = chunk.usage or usage
        sglext = (chunk.model_extra or {}).get("sglext") or sglext
    assert reasons[-1] == "length"
    assert usage is not None
    assert usage.completion_tokens == 50
    assert sglext is not None
    assert sglext["spec_tokens_details"]["spec_verify_ct"] > 0
    # the streamed text is the 50 tokens the server counted, by the served model's own tokenizer
    tokenizer = Tokenizer.from_file(str(models[0] / "tokenizer.json"))
    assert len(tokenizer.encode(content, add_special_tokens=False).ids) == 50


def test_same_seed_and_request_give_the_same_numbers(sim: testing.SimProcess) -> None:
    body = {"text": CHAT_PROMPT + " again", "sampling_params": {"max_new_tokens": 120, "ignore_eos": True}}
    first, second = _generate(sim, body)["meta_info"], _generate(sim, body)["meta_info"]
    keys = ("spec_verify_ct", "spec_num_correct_drafts", "spec_correct_drafts_histogram", "e2e_latency")
    assert {k: first[k] for k in keys} == {k: second[k] for k in keys}
    other = _generate(sim, {**body, "text": body["text"] + "!"})["meta_info"]
    assert other["spec_correct_drafts_histogram"] != first["spec_correct_drafts_histogram"]


def _stream_steps(sim: testing.SimProcess, body: dict) -> tuple[list[int], dict]:
    """completion_tokens after each event of a streamed /generate, and the last meta_info."""
    steps, meta = [], {}
    with httpx.stream("POST", sim.url + "/generate", json={**body, "stream": True}, timeout=30) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: {"):
                meta = json.loads(line[len("data: ") :])["meta_info"]
                steps.append(meta["completion_tokens"])
    return steps, meta


def test_server_average_acceptance_lags_by_decode_log_interval_and_flush_resets_it(sim: testing.SimProcess) -> None:
    # sglang 0.5.23 metrics_reporter.py: /server_info's average folds in every decode_log_interval (40) decode
    # batches; one request at a time, each streamed event after the first is one decode batch
    info = httpx.get(sim.url + "/server_info").json()
    assert info["decode_log_interval"] == 40
    assert httpx.post(sim.url + "/flush_cache").text.startswith("Cache flushed.")
    state = httpx.get(sim.url + "/server_info").json()["internal_states"][0]
    assert "avg_spec_accept_length" not in state
    batches: list[int] = []
    for i, prompt in enumerate((CODE_PROMPT, CHAT_PROMPT, CHAT_PROMPT + " Again.", CODE_PROMPT + " Once more.")):
        body = {"text": prompt, "sampling_params": {"max_new_tokens": 60, "ignore_eos": True}}
        steps, meta = _stream_steps(sim, body)
        batches += [b - a for a, b in itertools.pairwise(steps)]
        assert len(steps) - 1 == meta["spec_verify_ct"]
        state = httpx.get(sim.url + "/server_info").json()["internal_states"][0]
        folded = len(batches) // 40 * 40
        if folded == 0:
            assert "avg_spec_accept_length" not in state, i  # not refreshed yet: fewer than 40 decode batches
        else:
            assert state["avg_spec_accept_length"] == pytest.approx(sum(batches[:folded]) / folded), i
    assert len(batches) >= 40
    assert state["last_gen_throughput"] > 0
    assert httpx.get(sim.url + "/flush_cache").status_code == 200
    assert "avg_spec_accept_length" not in httpx.get(sim.url + "/server_info").json()["internal_states"][0]


def test_concurrent_requests_share_steps_and_each_is_slower(sim: testing.SimProcess) -> None:
    def body(i: int) -> dict:
        return {"text": f"{CHAT_PROMPT} #{i}", "sampling_params": {"max_new_tokens": 200, "ignore_eos": True}}

    async def run(n: int) -> list[dict]:
        async with httpx.AsyncClient(base_url=sim.url, timeout=60) as client:
            responses = await asyncio.gather(*(client.post("/generate", json=body(i)) for i in range(n)))
        return [r.json()["meta_info"] for r in responses]

    (alone,) = asyncio.run(run(1))
    together = asyncio.run(run(8))
    assert all(m["completion_tokens"] == 200 for m in together)
    assert min(m["e2e_latency"] for m in together) > alone["e2e_latency"]
    # batched, not serialised: eight requests take far less than eight times one
    assert max(m["e2e_latency"] for m in together) < 4 * alone["e2e_latency"]


def test_metrics_use_sglang_names_and_labels(sim: testing.SimProcess) -> None:
    _generate(sim, {"text": CHAT_PROMPT, "sampling_params": {"max_new_tokens": 30}})
    resp = httpx.get(sim.url + "/metrics")
    assert resp.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(resp.text)}
    for name in (
        "sglang:spec_accept_length",
        "sglang:spec_accept_rate",
        "sglang:spec_num_draft_tokens",
        "sglang:gen_throughput",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:token_usage",
        "sglang:time_to_first_token_seconds",
        "sglang:inter_token_latency_seconds",
        "sglang:e2e_request_latency_seconds",
    ):
        assert name in families, name
    # prometheus_client's parser drops a counter's _total suffix from the family name
    for name in ("sglang:prompt_tokens", "sglang:generation_tokens", "sglang:spec_verify_calls", "sglang:num_requests"):
        assert families[name].type == "counter", name
    accept = families["sglang:spec_accept_length"].samples[0]
    assert accept.labels == {
        "model_name": "kimi-k2.6",
        "engine_type": "unified",
        "tp_rank": "0",
        "pp_rank": "0",
        "moe_ep_rank": "0",
    }
    assert 1.0 < accept.value < 9.0
    draft = families["sglang:spec_num_draft_tokens"].samples[0].value
    assert draft == 9
    generated = sum(
        s.value for s in families["sglang:generation_tokens"].samples if s.name == "sglang:generation_tokens_total"
    )
    assert generated >= 30


def test_openai_sdk_completions_stream_deltas_add_up(sim: testing.SimProcess) -> None:
    client = openai.OpenAI(base_url=sim.url + "/v1", api_key="unused")
    stream = client.completions.create(model="kimi-k2.6", prompt=CODE_PROMPT, max_tokens=400, stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert "def gcd(a, b):" in text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_bad_requests_get_sglangs_error_shape(sim: testing.SimProcess) -> None:
    resp = httpx.post(sim.url + "/generate", json={"sampling_params": {}})
    assert resp.status_code == 400
    body = resp.json()
    assert (body["object"], body["code"]) == ("error", 400)
    assert "text or input_ids" in body["message"]
