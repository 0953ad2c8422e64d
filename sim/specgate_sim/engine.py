"""The simulated scheduler: requests in flight share decode/verify steps (continuous batching).

One asyncio task runs steps back to back while there is work. A step admits waiting requests up to
``max_running_requests`` (their prefill rides in that step and yields their first token), verifies
every running request once (drawing its committed tokens from the speculative model), then sleeps
the step's modelled latency times the time scale. Timings handed out are simulated seconds on the
engine's own clock, so they do not depend on how fast this machine runs the loop.

A request whose consumer goes away is aborted as SGLang aborts it (Engine.generate, _emit), and while
SPECGATE_SIM_FALLBACK_FILE exists the engine decodes without speculation (Engine.fallback_active).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from specgate_sim import loads
from specgate_sim.loads import LoadSnapshot
from specgate_sim.metrics import Metrics
from specgate_sim.specmodel import (
    AcceptanceParams,
    LatencyParams,
    SpecConfig,
    Tree,
    batch_step_ms,
    build_tree,
    depth_probs,
    prefill_ms,
    sample_accept_length,
    verify_tokens,
)

log = logging.getLogger("sglang.srt.managers.scheduler")

KV_CAPACITY_TOKENS = 1_000_000
THROUGHPUT_WINDOW_STEPS = 40
# sglang 0.5.23 srt/arg_groups/fields/observability.py: load_snapshot_publish_interval = 15 ("Publish load snapshot
# to shared memory every N decode iterations. Prefill and idle always publish immediately.")
LOAD_SNAPSHOT_PUBLISH_INTERVAL = 15
# srt/managers/scheduler.py::STEP_MAX_US: a longer decode step is left out of the decode moments
STEP_MAX_US = 2_000_000
# SPECGATE_SIM_FALLBACK_FILE is stat()ed at most this often (wall seconds), from the scheduler loop
FALLBACK_POLL_SECONDS = 0.5


@dataclass
class Job:
    """One generation: what it will say is planned up front; the engine decides when."""

    prompt_tokens: int
    pieces: list[str]  # the output, one token per piece
    finish_reason: dict[str, object]  # SGLang's finish_reason once every piece is out
    kind: str
    seed: int
    streaming: bool = False
    output_ids: list[int] = field(default_factory=list)  # the pieces' token ids, as the tokenizer gave them
    # filled in by the engine
    emitted: int = 0
    verify_ct: int = 0
    correct_drafts: int = 0
    histogram: list[int] = field(default_factory=list)
    # Simulated times in integer nanoseconds: a difference is exact, so a request's latencies do not depend on how
    # far earlier requests moved the clock (a float clock rounded them differently the longer a server had run).
    arrival_ns: int = 0
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    finished_ns: int | None = None
    cancelled: bool = False
    queue: asyncio.Queue[int] = field(default_factory=asyncio.Queue)

    @property
    def done(self) -> bool:
        return self.emitted >= len(self.pieces)

    @property
    def first_token_at(self) -> float | None:
        return None if self.first_token_ns is None else self.first_token_ns / 1e9

    @property
    def finished_at(self) -> float | None:
        return None if self.finished_ns is None else self.finished_ns / 1e9

    @property
    def ttft_seconds(self) -> float:
        return ((self.first_token_ns or self.arrival_ns) - self.arrival_ns) / 1e9

    @property
    def e2e_seconds(self) -> float:
        return ((self.finished_ns or self.arrival_ns) - self.arrival_ns) / 1e9

    @property
    def decode_seconds(self) -> float:
        """First token to last."""
        return ((self.finished_ns or 0) - (self.first_token_ns or 0)) / 1e9


@dataclass(frozen=True)
class Window:
    seconds: float
    produced: int
    accepted: int
    verifies: int
    correct: int
    proposed: int


@dataclass
class Stats:
    """Server-wide speculative counters, kept as the scheduler's metrics reporter keeps them (sglang 0.5.23:
    srt/managers/scheduler_components/metrics_reporter.py): every decode batch adds to the interval's counters
    (update_spec_metrics: accepted tokens, and one verify per request in the batch); every
    ``decode_log_interval``-th decode batch (report_decode_stats, called after forward_ct_decode += 1) folds them
    into the lifetime totals, and /server_info's avg_spec_accept_length reads only those totals
    (scheduler_components/internal_state.py::_average_accept_length; absent while they are zero). So the figure
    lags: it covers the decode batches up to the last multiple of the interval. /flush_cache resets everything,
    the decode batch count included (reset_metrics), so intervals count from the flush."""

    interval: int = 40
    decode_batches: int = 0
    accept_tokens: int = 0  # this interval's (spec_num_accept_tokens)
    verify_ct: int = 0  # spec_num_forward_ct
    correct_drafts: int = 0  # spec_num_correct_drafts
    total_accept_tokens: int = 0  # spec_total_num_accept_tokens
    total_verify_ct: int = 0  # spec_total_num_forward_ct
    accept_rate: float = 0.0  # stats.spec_accept_rate: the last folded interval's correct / proposed drafts

    def decode_batch(
        self, accept_tokens: int, verify_ct: int, speculative: bool, correct_drafts: int = 0, draft_per_round: int = 0
    ) -> None:
        self.accept_tokens += accept_tokens
        self.verify_ct += verify_ct
        self.correct_drafts += correct_drafts
        self.decode_batches = (self.decode_batches + 1) % (1 << 30)
        if speculative and self.decode_batches % self.interval == 0:
            proposed = self.verify_ct * draft_per_round
            self.accept_rate = self.correct_drafts / proposed if proposed > 0 else 0.0
            self.total_accept_tokens += self.accept_tokens
            self.total_verify_ct += self.verify_ct
            self.accept_tokens = self.verify_ct = self.correct_drafts = 0

    @property
    def avg_accept_length(self) -> float | None:
        return self.total_accept_tokens / self.total_verify_ct if self.total_verify_ct > 0 else None


class Engine:
    def __init__(
        self,
        spec: SpecConfig,
        *,
        max_running: int,
        time_scale: float,
        accept_multiplier: float = 1.0,
        num_draft_tokens: int | None = None,
        cuda_graphs: bool = True,
        metrics: Metrics | None = None,
        acc: AcceptanceParams | None = None,
        lat: LatencyParams | None = None,
        decode_log_interval: int = 40,
        fallback_file: str | None = None,
    ) -> None:
        self.spec = spec
        self.max_running = max(1, max_running)
        self.time_scale = time_scale
        self.accept_multiplier = accept_multiplier
        self.num_draft_tokens = num_draft_tokens
        self.cuda_graph_factor = 1.0 if cuda_graphs else 1.35
        self.metrics = metrics
        self.acc = acc or AcceptanceParams()
        self.lat = lat or LatencyParams()
        self.clock_ns = 0  # simulated time (see Job)
        self.decode_log_interval = max(1, decode_log_interval)
        self.stats = Stats(self.decode_log_interval)
        self.waiting: deque[Job] = deque()
        self.running: list[Job] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._trees: dict[tuple[str, int], tuple[list[float], Tree]] = {}
        self._recent: deque[Window] = deque(maxlen=THROUGHPUT_WINDOW_STEPS)
        # what /v1/loads reads (loads.py): the last published snapshot; until the scheduler publishes one, the
        # empty slot ShmLoadSnapshotWriter writes when it is created
        self.load = LoadSnapshot()
        self._publish_counter = 0
        # scheduler.py's cumulative counters (total_prefill_*, decode_moment_totals), in simulated time
        self.total_prefill_uncached_tokens = 0
        self.total_prefill_busy_us = 0
        self.decode_moment_totals = [0.0] * 6
        # SPECGATE_SIM_FALLBACK_FILE (fallback_active)
        self.fallback_file = fallback_file
        self._fallback = False
        self._fallback_checked = -math.inf

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        self._task.add_done_callback(self._died)

    @staticmethod
    def _died(task: asyncio.Task[None]) -> None:
        # a dead scheduler would leave every request hanging: say so loudly, as SGLang's watchdog does
        if not task.cancelled() and task.exception() is not None:
            log.error("Scheduler hit an exception", exc_info=task.exception())

    @property
    def clock(self) -> float:
        """Simulated seconds since the engine started."""
        return self.clock_ns / 1e9

    @property
    def last_gen_throughput(self) -> float:
        """Tokens per simulated second over the last steps (SGLang logs it per interval)."""
        seconds = sum(w.seconds for w in self._recent)
        return sum(w.produced for w in self._recent) / seconds if seconds else 0.0

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def flush(self) -> None:
        self.stats = Stats(self.decode_log_interval)
        self._recent.clear()

    def fallback_active(self) -> bool:
        """Whether the SPECGATE_SIM_FALLBACK_FILE exists (stat()ed at most every FALLBACK_POLL_SECONDS): then the
        engine decodes as SGLang does after a silent fallback to plain decoding (sgl-project/sglang#34285), one token
        per forward step. The speculative bookkeeping goes on, so every step of a request counts as one verify step
        that committed one token (the prefill's token included): a request decoded wholly in that state reports
        spec_verify_ct == completion_tokens, an acceptance length of 1.0 on its meta_info, on
        sglang:generation_tokens_total / sglang:spec_verify_calls_total, on the sglang:spec_accept_length gauge, on
        /server_info's avg_spec_accept_length and on /v1/loads' speculative figures."""
        if self.fallback_file is None:
            return False
        now = time.monotonic()
        if now - self._fallback_checked >= FALLBACK_POLL_SECONDS:
            self._fallback_checked = now
            present = os.path.exists(self.fallback_file)
            if present and not self._fallback:
                log.warning(
                    "specgate-sim: %s exists: decoding without speculation (one token per step)", self.fallback_file
                )
            elif self._fallback and not present:
                log.warning("specgate-sim: %s removed: speculative decoding again", self.fallback_file)
            self._fallback = present
        return self._fallback

    def _tree(self, kind: str, context: int) -> tuple[list[float], Tree]:
        bucket = 1 << max(9, math.ceil(math.log2(max(context, 1))))
        key = (kind, bucket)
        if key not in self._trees:
            probs = depth_probs(self.spec, kind, bucket, self.acc, self.accept_multiplier)
            self._trees[key] = (probs, build_tree(self.spec, probs, self.acc))
        return self._trees[key]

    async def generate(self, job: Job) -> AsyncIterator[int]:
        """Yield the number of pieces out so far after every step that produced some."""
        job.arrival_ns = self.clock_ns
        job.histogram = [0] * (self.spec.block_size + 1 if self.spec.enabled else 1)
        self.waiting.append(job)
        self._wake.set()
        try:
            while True:
                emitted = await job.queue.get()
                yield emitted
                if emitted >= len(job.pieces):
                    return
        finally:
            if not job.done:
                # the consumer went away before the end (a client disconnect): tokenizer_manager.py::generate_request
                # (except BaseException → _release_req_states_on_failure) aborts the dispatched request at once, and
                # TokenizerManager.abort_request counts it (observe_one_aborted_request). The scheduler drops it if
                # it is still waiting, else it finishes after its next forward pass (_step).
                job.cancelled = True
                if self.metrics:
                    self.metrics.aborted()

    async def _loop(self) -> None:
        while True:
            if not self.waiting and not self.running:
                # scheduler.py::on_idle: the fully-idle publish is forced, so the busy -> idle edge shows at once
                self.publish_load(force=True)
                self._wake.clear()
                await self._wake.wait()
                continue
            await self._step()

    async def _step(self) -> None:
        admitted: list[Job] = []
        while self.waiting and len(self.running) + len(admitted) < self.max_running:
            job = self.waiting.popleft()
            if not job.cancelled:
                admitted.append(job)
        decoding = list(self.running)
        # SPECGATE_SIM_FALLBACK_FILE: plain decoding, one token per request and step, at plain decoding's cost
        fallback = self.spec.enabled and self.fallback_active()
        step_spec = SpecConfig() if fallback else self.spec
        decode_ms = prefill_part_ms = 0.0
        trees = {} if fallback else {id(j): self._tree(j.kind, j.prompt_tokens + j.emitted) for j in decoding}
        if decoding:
            tokens = len(decoding) if fallback else sum(verify_tokens(self.spec, trees[id(j)][1]) for j in decoding)
            mean_ctx = sum(j.prompt_tokens + j.emitted for j in decoding) / len(decoding)
            decode_ms = batch_step_ms(step_spec, tokens, len(decoding), mean_ctx, self.lat) * self.cuda_graph_factor
        if admitted:
            prefill_part_ms = sum(prefill_ms(j.prompt_tokens, self.lat) for j in admitted)
            if not decoding:
                prefill_part_ms += batch_step_ms(SpecConfig(), len(admitted), len(admitted), 0.0, self.lat)
        ms = decode_ms + prefill_part_ms
        await asyncio.sleep(ms / 1000.0 * self.time_scale)
        self.clock_ns += round(ms * 1_000_000)

        produced = accepted = verifies = proposed = correct = 0
        for job in decoding:
            # a cancelled running request still takes this forward pass, then finishes (scheduler.py::abort_request,
            # "Abort method 3": req.to_finish = FINISH_ABORT(), checked after the next forward)
            if self.spec.enabled and not fallback:
                probs, tree = trees[id(job)]
                tau = sample_accept_length(tree, probs, self.acc, self._rng(job))
            else:
                tau = 1
            n = min(tau, len(job.pieces) - job.emitted)
            if self.spec.enabled:
                job.verify_ct += 1
                job.correct_drafts += n - 1
                job.histogram[min(n - 1, len(job.histogram) - 1)] += 1
                accepted += n
                verifies += 1
                correct += n - 1
                proposed += (self.num_draft_tokens or 1) - 1
            produced += n
            self._emit(job, n)
        if decoding:  # a decode batch (the admitted requests' prefill is not one)
            draft_per_round = (self.num_draft_tokens or 1) - 1
            self.stats.decode_batch(accepted, verifies, self.spec.enabled, correct, draft_per_round)
            # scheduler.py::_accumulate_decode_moment(batch size, step µs, tokens generated)
            step_us = round(decode_ms * 1000)
            if 0 < step_us < STEP_MAX_US:
                b, t = float(len(decoding)), float(step_us)
                for i, value in enumerate((1.0, b, t, b * b, b * t, float(produced))):
                    self.decode_moment_totals[i] += value
        if admitted:  # scheduler.py: a prefill batch adds its busy time and its uncached tokens
            self.total_prefill_busy_us += round(prefill_part_ms * 1000)
            self.total_prefill_uncached_tokens += sum(j.prompt_tokens for j in admitted)
        for job in admitted:
            produced += 1
            if fallback:  # the prefill's forward is one of fallback's one-token steps too
                job.verify_ct += 1
                job.histogram[0] += 1
            self._emit(job, 1)
            if job.finished_ns is None:
                self.running.append(job)
        self.running = [j for j in self.running if j.finished_ns is None]
        self._recent.append(Window(ms / 1000.0, produced, accepted, verifies, correct, proposed))
        # scheduler.py::process_batch_result: publish_load_snapshot(force=batch.forward_mode.is_extend())
        self.publish_load(force=bool(admitted))
        self._publish()

    def _rng(self, job: Job) -> random.Random:
        # one stream per request and step: same request + seed -> same draws, whatever else runs
        return random.Random(job.seed * 1_000_003 + job.verify_ct)

    def _emit(self, job: Job, n: int) -> None:
        now = self.clock_ns
        job.emitted += n
        if job.first_token_ns is None:
            job.first_token_ns = now
            if self.metrics and not job.cancelled:  # collect_metrics: no TTFT for a first output that is an abort
                self.metrics.first_token(job.ttft_seconds, job.streaming)
        elif self.metrics and job.last_token_ns is not None:
            self.metrics.inter_token((now - job.last_token_ns) / 1e9 / n)
        job.last_token_ns = now
        if job.done or job.cancelled:
            # finished, or aborted by then (it finishes with FINISH_ABORT after this pass): either way the scheduler
            # streams it out finished and tokenizer_manager.py::collect_metrics observes it once
            # (observe_one_finished_request) with the tokens and verify steps it made
            job.finished_ns = now
            if job.cancelled and not job.done:
                # schedule_batch.py::FINISH_ABORT().to_json()
                job.finish_reason = {"type": "abort", "message": "Aborted", "status_code": None, "err_type": None}
            if self.metrics:
                self.metrics.finished(
                    prompt_tokens=job.prompt_tokens,
                    completion_tokens=job.emitted,
                    verify_ct=job.verify_ct,
                    e2e_seconds=job.e2e_seconds,
                    streaming=job.streaming,
                )
        job.queue.put_nowait(job.emitted)

    def publish_load(self, *, force: bool) -> None:
        """sglang 0.5.23 srt/managers/scheduler.py::publish_load_snapshot: prefill and idle publish at once, decode
        every LOAD_SNAPSHOT_PUBLISH_INTERVAL-th batch. /metrics' sglang:num_running_reqs and sglang:num_queue_reqs
        are set from the same snapshot, so the two never disagree."""
        if not force:
            self._publish_counter += 1
            if self._publish_counter < LOAD_SNAPSHOT_PUBLISH_INTERVAL:
                return
        self._publish_counter = 0
        self.load = self.snapshot()
        if self.metrics:
            self.metrics.load(running=self.load.num_running_reqs, queued=self.load.num_waiting_reqs)

    def snapshot(self) -> LoadSnapshot:
        """srt/managers/scheduler_components/load_inquirer.py::SchedulerLoadInquirer.get_loads, for one scheduler
        with no prefix cache (cache_hit_rate 0: every waiting token is uncached), no PD disaggregation and no LoRA."""
        running = [j for j in self.running if not j.cancelled and not j.done]
        waiting = [j for j in self.waiting if not j.cancelled]
        used = sum(j.prompt_tokens + j.emitted for j in running)  # KV tokens held by the running batch
        pending = sum(j.prompt_tokens for j in waiting)  # req.seqlen of the waiting queue
        speculative = None
        if self.spec.enabled and self.stats.total_verify_ct > 0:
            speculative = {
                "accept_length": self.stats.total_accept_tokens / self.stats.total_verify_ct,
                "accept_rate": self.stats.accept_rate,
            }
        totals = self.decode_moment_totals
        return LoadSnapshot(
            timestamp=time.time(),
            dp_rank=0,
            num_running_reqs=len(running),
            num_waiting_reqs=len(waiting),
            num_waiting_uncached_tokens=pending,
            num_used_tokens=used,
            num_total_tokens=used + pending,
            num_active_tokens=used + pending,
            num_prealloc_ready_tokens=0,
            max_total_num_tokens=KV_CAPACITY_TOKENS,
            max_running_requests=self.max_running,
            token_usage=round(min(used / KV_CAPACITY_TOKENS, 1.0), 4),
            gen_throughput=round(self.last_gen_throughput, 2),
            cache_hit_rate=0.0,
            utilization=0.0,  # metrics_reporter.py::_calculate_utilization: stuck at 0 in 0.5.23 (its own TODO)
            total_prefill_uncached_tokens=self.total_prefill_uncached_tokens,
            total_prefill_busy_us=self.total_prefill_busy_us,
            decode_moments=list(totals) if totals[0] > 0 else None,
            speculative=speculative,
            disaggregation=loads.disaggregation_null(),
            queues=loads.queues(len(waiting)),
        )

    def _publish(self) -> None:
        """Scheduler gauges over the last steps, as SGLang logs them per interval (the request counts come from
        the load snapshot: publish_load)."""
        if not self.metrics:
            return
        accepted = sum(w.accepted for w in self._recent)
        verifies = sum(w.verifies for w in self._recent)
        correct = sum(w.correct for w in self._recent)
        proposed = sum(w.proposed for w in self._recent)
        used = sum(j.prompt_tokens + j.emitted for j in self.running)
        self.metrics.scheduler(
            token_usage=min(used / KV_CAPACITY_TOKENS, 1.0),
            gen_throughput=self.last_gen_throughput,
            accept_length=accepted / verifies if verifies else None,
            accept_rate=correct / proposed if proposed else None,
            draft_tokens=self.num_draft_tokens if self.spec.enabled else None,
        )
