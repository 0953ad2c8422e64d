"""The batching engine, in process: shared steps, per-request determinism, server-wide counters."""

from __future__ import annotations

import asyncio
import itertools

from specgate_sim.engine import Engine, Job
from specgate_sim.loads import LoadSnapshot
from specgate_sim.metrics import Metrics
from specgate_sim.specmodel import SpecConfig

DDTREE = SpecConfig("DDTREE", 8, 8, 8, 4)


def _job(seed: int, n: int = 100, kind: str = "chat") -> Job:
    return Job(prompt_tokens=200, pieces=["x"] * n, finish_reason={"type": "length", "length": n}, kind=kind, seed=seed)


async def _run(engine: Engine, jobs: list[Job]) -> None:
    engine.start()
    try:

        async def drain(job: Job) -> None:
            async for _ in engine.generate(job):
                pass

        await asyncio.gather(*(drain(j) for j in jobs))
    finally:
        await engine.stop()


def _engine(
    spec: SpecConfig = DDTREE, *, max_running: int = 48, cuda_graphs: bool = True, metrics: Metrics | None = None
) -> Engine:
    return Engine(
        spec, max_running=max_running, time_scale=0.0, num_draft_tokens=9, cuda_graphs=cuda_graphs, metrics=metrics
    )


def test_a_request_draws_the_same_steps_alone_or_in_a_batch() -> None:
    alone = _job(7)
    asyncio.run(_run(_engine(), [alone]))
    crowd = [_job(7), *(_job(s) for s in range(20, 27))]
    asyncio.run(_run(_engine(), crowd))
    assert (alone.verify_ct, alone.histogram) == (crowd[0].verify_ct, crowd[0].histogram)


def test_batched_requests_share_steps() -> None:
    engine = _engine()
    jobs = [_job(s) for s in range(8)]
    asyncio.run(_run(engine, jobs))
    solo = _engine()
    asyncio.run(_run(solo, [_job(0)]))
    # eight requests at once take longer than one, far less than eight in a row
    assert solo.clock < engine.clock < 3 * solo.clock


def test_max_running_requests_queues_the_rest() -> None:
    engine = _engine(max_running=2)
    jobs = [_job(s, n=50) for s in range(4)]
    asyncio.run(_run(engine, jobs))
    first_tokens = sorted(j.first_token_at or 0.0 for j in jobs)
    assert first_tokens[2] > first_tokens[1]  # the third waited for a free slot
    assert all(j.emitted == 50 for j in jobs)


def test_server_counters_are_tokens_over_verify_steps_and_flush_clears_them() -> None:
    # decode_log_interval 1: every decode batch is folded at once, so the average is over every verify step
    engine = Engine(DDTREE, max_running=48, time_scale=0.0, num_draft_tokens=9, decode_log_interval=1)
    jobs = [_job(s, n=120, kind="code") for s in range(3)]
    asyncio.run(_run(engine, jobs))
    verify = sum(j.verify_ct for j in jobs)
    assert engine.stats.total_verify_ct == verify
    assert engine.stats.avg_accept_length == (3 * 119) / verify  # the first token of each comes from prefill
    engine.flush()
    assert engine.stats.avg_accept_length is None


def test_server_average_folds_every_decode_log_interval_batches_as_sglang_does() -> None:
    """metrics_reporter.py: the average /server_info reports covers whole intervals of decode batches only."""
    engine = Engine(DDTREE, max_running=1, time_scale=0.0, num_draft_tokens=9, decode_log_interval=10)
    job = _job(5, n=230, kind="code")  # 47 decode batches: four intervals and a tail of 7
    short = _job(6, n=30, kind="code")
    seen: dict[str, float | None] = {}

    async def drive() -> list[int]:
        # tokens out after each step of ``job``, run alone: the first step is its prefill, each later a decode batch
        engine.start()
        try:
            steps = [emitted async for emitted in engine.generate(job)]
            seen["after_job"] = engine.stats.avg_accept_length
            engine.flush()
            seen["after_flush"] = engine.stats.avg_accept_length
            async for _ in engine.generate(short):
                pass
            return steps
        finally:
            await engine.stop()

    steps = asyncio.run(drive())
    batches = [b - a for a, b in itertools.pairwise(steps)]  # each decode batch's accepted tokens
    assert len(batches) == job.verify_ct == 47
    assert seen["after_job"] == sum(batches[:40]) / 40
    assert seen["after_job"] != sum(batches) / len(batches)  # the tail since the last fold is missing
    assert seen["after_flush"] is None
    assert short.verify_ct < 10
    assert engine.stats.avg_accept_length is None  # fewer decode batches than one interval since the flush


def test_without_speculation_each_step_yields_one_token() -> None:
    engine = Engine(SpecConfig(), max_running=8, time_scale=0.0)
    job = _job(1, n=40)
    asyncio.run(_run(engine, [job]))
    assert (job.verify_ct, engine.stats.avg_accept_length) == (0, None)
    # 39 decode steps of ~10.2 ms plus the prefill step
    assert 0.39 < engine.clock < 0.45


def test_disabling_cuda_graphs_slows_steps() -> None:
    fast, slow = _engine(), _engine(cuda_graphs=False)
    asyncio.run(_run(fast, [_job(3)]))
    asyncio.run(_run(slow, [_job(3)]))
    assert slow.clock > 1.2 * fast.clock


def test_metrics_follow_the_engine() -> None:
    metrics = Metrics("m")
    engine = _engine(metrics=metrics)
    asyncio.run(_run(engine, [_job(s, n=60) for s in range(3)]))
    text = metrics.render().decode()
    assert 'sglang:generation_tokens_total{engine_type="unified",is_streaming="false",model_name="m"} 180.0' in text
    assert "sglang:spec_num_draft_tokens" in text



async def _one_after_another(engine: Engine, jobs: list[Job]) -> None:
    engine.start()
    try:
        for job in jobs:
            async for _ in engine.generate(job):
                pass
    finally:
        await engine.stop()


def test_a_request_takes_the_same_simulated_time_whatever_the_engine_served_before() -> None:
    # A module's sim server outlives its tests: under a float clock, e2e_latency (finished - arrival) rounded
    # differently once earlier requests had moved the clock on, and test_same_seed_and_request_give_the_same_numbers
    # failed in one random test order (0.8814881848565599 != 0.8814881848565601).
    fresh = _job(7)
    asyncio.run(_one_after_another(_engine(), [fresh]))
    for served_before in (1, 3, 10, 40):
        engine = _engine()
        again = _job(7)
        asyncio.run(_one_after_another(engine, [*(_job(100 + s, n=37 + s) for s in range(served_before)), again]))
        assert engine.clock > fresh.e2e_seconds
        assert (again.e2e_seconds, again.ttft_seconds) == (
            fresh.e2e_seconds, fresh.ttft_seconds), served_before


def test_the_load_snapshot_is_published_on_prefill_every_15th_decode_batch_and_when_idle() -> None:
    # sglang 0.5.23 scheduler.py::publish_load_snapshot with load_snapshot_publish_interval 15
    engine = _engine()
    published: list[LoadSnapshot] = []
    snapshot = engine.snapshot

    def counting() -> LoadSnapshot:
        published.append(snapshot())
        return published[-1]

    engine.snapshot = counting  # type: ignore[method-assign]
    job = _job(1, n=400)
    asyncio.run(_run(engine, [job]))
    # idle at start, the prefill step, every 15th of the decode batches (one verify each), the idle edge
    assert len(published) == 1 + 1 + job.verify_ct // 15 + 1
    assert (published[0].num_running_reqs, published[0].timestamp > 0) == (0, True)
    assert (published[1].num_running_reqs, published[1].num_used_tokens) == (1, 201)
    assert engine.load is published[-1]
    assert (engine.load.num_running_reqs, engine.load.num_waiting_reqs, engine.load.num_total_tokens) == (0, 0, 0)


def test_the_load_snapshot_counts_queues_and_work_and_metrics_agree_with_it() -> None:
    metrics = Metrics("m")
    engine = Engine(DDTREE, max_running=2, time_scale=0.0, num_draft_tokens=9, metrics=metrics, decode_log_interval=1)
    published: list[LoadSnapshot] = []
    snapshot = engine.snapshot

    def counting() -> LoadSnapshot:
        published.append(snapshot())
        return published[-1]

    engine.snapshot = counting  # type: ignore[method-assign]
    jobs = [_job(s, n=60) for s in range(3)]
    asyncio.run(_run(engine, jobs))
    assert max((s.num_running_reqs, s.num_waiting_reqs) for s in published) == (2, 1)
    busy = next(s for s in published if s.num_waiting_reqs)
    assert busy.num_waiting_uncached_tokens == busy.num_total_tokens - busy.num_used_tokens == 200
    assert busy.queues == {"waiting": 1, "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0}
    final = engine.load
    assert (final.total_prefill_uncached_tokens, final.max_running_requests) == (600, 2)
    assert final.decode_moments is not None
    count, batch, _, _, _, generated = final.decode_moments
    assert count == engine.stats.decode_batches
    assert batch == sum(j.verify_ct for j in jobs)  # every request in a decode batch verifies once
    assert generated == 3 * 59  # the first token of each comes from its prefill
    assert final.speculative is not None
    assert final.speculative["accept_length"] == engine.stats.avg_accept_length
    labels = '{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"}'
    text = metrics.render().decode()
    assert f"sglang:num_running_reqs{labels} 0.0" in text
    assert f"sglang:num_queue_reqs{labels} 0.0" in text
