"""spec_bench's client against a real sim process on loopback, API key on: the numbers it reports are the server's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible.module_utils.specgate.gate import code_eval, sandbox
from ansible.module_utils.specgate.gate.bench_client import BenchError
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, run_benchmark
from specgate_sim import testing

KEY = "test-key-7f3a"
# The eval's code runs in the sandbox; systemd-run's stand-in on this machine (tests/sandbox_double).
SANDBOX = sandbox.Sandbox(
    python="/usr/bin/python3", systemd_run=str(Path(__file__).resolve().parents[1] / "sandbox_double" / "systemd-run")
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    target = testing.write_model_dir(root / "target", testing.TARGET_CONFIG, weight_bytes=1 << 20)
    drafter = testing.write_model_dir(root / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)
    return target, drafter


def _sim(models, tmp_path_factory, env) -> Iterator[object]:
    target, drafter = models
    args = f"--model-path {target} --speculative-algorithm DFLASH --speculative-draft-model-path {drafter}"
    proc = testing.start(
        [*args.split(), "--api-key", KEY, "--enable-metrics"],
        log_path=tmp_path_factory.mktemp("log") / "sim.log",
        env={"SPECGATE_SIM_SEED": "3", **env},
    )
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def sim(models, tmp_path_factory):
    yield from _sim(models, tmp_path_factory, {})


@pytest.fixture(scope="module")
def degraded_sim(models, tmp_path_factory):
    yield from _sim(
        models, tmp_path_factory, {"SPECGATE_SIM_ACCEPT_MULTIPLIER": "0.6", "SPECGATE_SIM_WRONG_FRACTION": "0.25"}
    )


def settings(port: int, **kw) -> BenchSettings:
    base = {
        "port": port,
        "api_key": KEY,
        "contexts": (("short", 256), ("long", 2048)),
        "concurrency": (1, 8),
        "output_tokens": 48,
        "min_requests": 4,
        "warmup_requests": 2,
        "eval_max_tokens": 512,
    }
    return BenchSettings(**{**base, **kw})


@pytest.fixture(scope="module")
def result(sim) -> dict:
    return asyncio.run(run_benchmark(settings(sim.port)))


def test_result_covers_the_whole_matrix_with_a_versioned_schema(result):
    assert result["schema"] == "specgate.bench/v1"
    cells = {(c["set"], c["context"], c["concurrency"]) for c in result["runs"][0]["cells"]}
    assert cells == {(s, ctx, c) for s in ("code", "math", "chat") for ctx in ("short", "long") for c in (1, 8)}
    assert result["server"]["speculative_algorithm"] == "DFLASH"


def test_every_token_asked_for_arrives_and_the_server_counted_the_same(result):
    for cell in result["runs"][0]["cells"]:
        t = cell["tokens"]
        assert t["output_received"] == t["output_requested"] == cell["requests"] * 48
        assert t["server_counted"] == pytest.approx(t["output_received"])


def test_prompts_come_out_at_the_requested_context_length(result):
    for cell in result["runs"][0]["cells"]:
        got = cell["tokens"]["prompt_mean_received"]
        assert abs(got - cell["context_tokens"]) / cell["context_tokens"] < 0.1, cell


def test_acceptance_differs_by_what_is_asked(result):
    sets = result["runs"][0]["sets"]
    assert sets["code"]["accept_length_request"] > sets["chat"]["accept_length_request"] + 0.5
    for s in sets.values():
        assert s["accept_length_server"] == pytest.approx(s["accept_length_request"], rel=0.1)


def test_latencies_are_measured_per_cell(result):
    for cell in result["runs"][0]["cells"]:
        assert 0 < cell["ttft"]["p50_ms"] <= cell["ttft"]["p99_ms"]
        assert cell["itl"]["p50_ms"] > 0
        assert cell["output_tok_s"] > 0


def test_the_benchmark_only_collects_the_evals_answers(result):
    ev = result["runs"][0]["eval"]
    assert code_eval.is_pending(ev)
    assert len(ev["answers"]) == 24
    assert all(set(a) == {"name", "answer", "finish_reason"} for a in ev["answers"])


def test_coding_eval_passes_every_problem_on_a_healthy_server(result):
    judged, _probe = code_eval.judge_runs(result, SANDBOX)
    ev = judged["runs"][0]["eval"]
    assert (ev["passed"], ev["problems"]) == (24, 24), ev["outcomes"]


def test_degraded_server_shows_lower_acceptance_and_failing_code(degraded_sim, result):
    degraded = asyncio.run(run_benchmark(settings(degraded_sim.port, sets=("code",), concurrency=(4,))))
    run = code_eval.judge_runs(degraded, SANDBOX)[0]["runs"][0]
    assert run["sets"]["code"]["accept_length_request"] < result["runs"][0]["sets"]["code"]["accept_length_request"] - 1
    assert run["eval"]["passed"] == 18
    assert run["eval"]["outcomes"]["failed"] + run["eval"]["outcomes"].get("error", 0) == 6


def test_wrong_api_key_names_the_variable(sim):
    with pytest.raises(BenchError, match="spec_gate_api_key"):
        asyncio.run(run_benchmark(settings(sim.port, api_key="wrong")))


def test_no_server_on_the_port_is_reported_as_unreachable():
    with pytest.raises(BenchError, match="cannot reach the server"):
        asyncio.run(run_benchmark(settings(testing.free_port())))
