"""The cell's server-side acceptance (flush, run, read) against a sim whose /server_info average lags as SGLang
0.5.23's does (refreshed every decode_log_interval decode batches): with /metrics the server's own counters give the
whole cell without lag; without, the lagging figure is all there is, and a short cell has none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from ansible.module_utils.specgate.gate.bench_client import Client
from ansible.module_utils.specgate.gate.bench_prompts import build_prompt
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, run_cell
from specgate_sim import testing


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    return testing.write_model_dir(root / "target", testing.TARGET_CONFIG), testing.write_model_dir(
        root / "drafter", testing.drafter_config(8)
    )


def _sim(models, tmp_path_factory, *extra: str) -> Iterator[testing.SimProcess]:
    target, drafter = models
    args = ["--model-path", str(target), "--speculative-algorithm", "DFLASH"]
    args += ["--speculative-draft-model-path", str(drafter), *extra]
    proc = testing.start(args, log_path=tmp_path_factory.mktemp("log") / "sim.log", env={"SPECGATE_SIM_SEED": "3"})
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def with_metrics(models, tmp_path_factory):
    yield from _sim(models, tmp_path_factory, "--enable-metrics")


@pytest.fixture(scope="module")
def without_metrics(models, tmp_path_factory):
    yield from _sim(models, tmp_path_factory)


def _cell(port: int, concurrency: int, requests: int, output_tokens: int) -> dict:
    s = BenchSettings(port=port, output_tokens=output_tokens)
    prompts = [build_prompt("code", i, 256, 1, 1.0) for i in range(requests)]

    async def go() -> dict:
        async with Client(s.base_url, None, 60) as client:
            return await run_cell(client, prompts, concurrency, s)

    return asyncio.run(go())


def test_a_short_cell_gets_the_servers_acceptance_from_its_counters(with_metrics):
    # 8 requests x 48 tokens at C=8: about a dozen decode batches, fewer than decode_log_interval (40)
    cell = _cell(with_metrics.port, 8, 8, 48)
    assert cell["server_decode_log_interval"] == 40
    assert cell["accept_length_server_info"] is None  # /server_info has folded nothing in yet
    assert cell["accept_length_server_source"] == "metrics"
    # the server's counters and its answers count the same tokens and verify steps
    assert cell["accept_length_server"] == pytest.approx(cell["accept_length_request"], rel=1e-9)


def test_a_long_cell_without_metrics_reads_the_lagging_server_info_figure(without_metrics):
    cell = _cell(without_metrics.port, 1, 4, 256)
    assert cell["accept_length_server_source"] == "server_info"
    # whole intervals of the cell's decode batches, each request's prefill token left out: close, not equal
    assert cell["accept_length_server"] == pytest.approx(cell["accept_length_request"], rel=0.1)
    assert cell["accept_length_server"] != cell["accept_length_request"]


def test_a_short_cell_without_metrics_has_no_server_figure(without_metrics):
    cell = _cell(without_metrics.port, 8, 8, 48)
    assert (cell["accept_length_server"], cell["accept_length_server_source"]) == (None, None)
    assert cell["accept_length_request"] > 1
