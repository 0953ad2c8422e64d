"""Prometheus metrics with SGLang 0.5.23's names, help texts, labels and buckets
(sglang 0.5.23: srt/observability/metrics_collector.py). Times are simulated seconds.

Exposition as SGLang's: srt/utils/common.py::add_prometheus_middleware serves a CollectorRegistry holding only
prometheus_client's multiprocess.MultiProcessCollector, so every family carries its ``# HELP`` (the metric's
documentation) and ``# TYPE`` lines, no ``_created`` samples are written, and a labelled metric that has no child
yet is left out altogether. The sim keeps one in-process registry and renders it through the same filter.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Metric, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

# metrics_collector.py::TokenizerMetricsCollector default buckets
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
ITL_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
    0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
)  # fmt: skip
E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400)
# metrics_collector.py::TokenizerMetricsCollector.get_loads_duration_seconds
GET_LOADS_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _MultiProcessView(Collector):
    """The families of ``registry`` as prometheus_client's MultiProcessCollector exposes them: without the
    ``_created`` samples (multiprocess mode keeps none) and without families that have no sample yet."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            samples = [s for s in family.samples if not s.name.endswith("_created")]
            if samples:
                shown = copy.copy(family)
                shown.samples = samples
                yield shown


class Metrics:
    def __init__(self, served_model_name: str) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # metrics_collector.py::tokenizer_metric_labels and the scheduler's labels (single rank)
        self.tok_labels = {"model_name": served_model_name, "engine_type": "unified"}
        self.sched_labels = {**self.tok_labels, "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
        sched = list(self.sched_labels)
        tok = list(self.tok_labels)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, sched, registry=r)

        # SchedulerMetricsCollector
        self.num_running_reqs = gauge("sglang:num_running_reqs", "The number of running requests.")
        self.num_queue_reqs = gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.")
        self.gen_throughput = gauge("sglang:gen_throughput", "The generation throughput (token/s).")
        self.token_usage = gauge("sglang:token_usage", "The token usage.")
        self.spec_accept_length = gauge(
            "sglang:spec_accept_length",
            "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
        )
        self.spec_accept_rate = gauge(
            "sglang:spec_accept_rate", "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch)."
        )
        self.spec_num_draft_tokens = gauge(
            "sglang:spec_num_draft_tokens",
            "Currently active speculative_num_draft_tokens (decouples from steps under topk>1).",
        )
        # TokenizerMetricsCollector
        self.prompt_tokens_total = Counter(
            "sglang:prompt_tokens_total", "Number of prefill tokens processed.", [*tok, "is_streaming"], registry=r
        )
        self.generation_tokens_total = Counter(
            "sglang:generation_tokens_total",
            "Number of generation tokens processed.",
            [*tok, "is_streaming"],
            registry=r,
        )
        self.num_requests_total = Counter(
            "sglang:num_requests_total", "Number of requests processed.", [*tok, "is_streaming"], registry=r
        )
        self.spec_verify_calls_total = Counter(
            "sglang:spec_verify_calls_total", "Number of speculative decoding verification calls.", tok, registry=r
        )
        self.time_to_first_token = Histogram(
            "sglang:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            [*tok, "is_streaming"],
            buckets=TTFT_BUCKETS,
            registry=r,
        )
        self.inter_token_latency = Histogram(
            "sglang:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            tok,
            buckets=ITL_BUCKETS,
            registry=r,
        )
        self.e2e_request_latency = Histogram(
            "sglang:e2e_request_latency_seconds",
            "Histogram of End-to-end request latency in seconds",
            [*tok, "is_streaming"],
            buckets=E2E_BUCKETS,
            registry=r,
        )
        self.get_loads_duration = Histogram(
            "sglang:get_loads_duration_seconds",
            "Time spent serving /v1/loads requests (seconds).",
            tok,
            buckets=GET_LOADS_BUCKETS,
            registry=r,
        )
        # metrics_collector.py::TokenizerMetricsCollector.num_aborted_requests_total (tokenizer labels only, no
        # is_streaming), bumped by TokenizerMetricsCollector.observe_one_aborted_request
        self.num_aborted_requests_total = Counter(
            "sglang:num_aborted_requests_total", "Number of requests aborted.", tok, registry=r
        )
        self._exposed = CollectorRegistry(auto_describe=False)
        self._exposed.register(_MultiProcessView(r))

    def _stream(self, streaming: bool) -> dict[str, str]:
        return {**self.tok_labels, "is_streaming": "true" if streaming else "false"}

    def load(self, *, running: int, queued: int) -> None:
        """The request counts of the load snapshot the engine just published (engine.py::Engine.publish_load)."""
        self.num_running_reqs.labels(**self.sched_labels).set(running)
        self.num_queue_reqs.labels(**self.sched_labels).set(queued)

    def scheduler(
        self,
        *,
        token_usage: float,
        gen_throughput: float,
        accept_length: float | None,
        accept_rate: float | None,
        draft_tokens: int | None,
    ) -> None:
        labels = self.sched_labels
        self.token_usage.labels(**labels).set(token_usage)
        self.gen_throughput.labels(**labels).set(gen_throughput)
        if accept_length is not None:
            self.spec_accept_length.labels(**labels).set(accept_length)
        if accept_rate is not None:
            self.spec_accept_rate.labels(**labels).set(accept_rate)
        if draft_tokens is not None:
            self.spec_num_draft_tokens.labels(**labels).set(draft_tokens)

    def first_token(self, seconds: float, streaming: bool) -> None:
        self.time_to_first_token.labels(**self._stream(streaming)).observe(seconds)

    def inter_token(self, seconds: float) -> None:
        self.inter_token_latency.labels(**self.tok_labels).observe(seconds)

    def finished(
        self, *, prompt_tokens: int, completion_tokens: int, verify_ct: int, e2e_seconds: float, streaming: bool
    ) -> None:
        """metrics_collector.py::TokenizerMetricsCollector.observe_one_finished_request, as
        tokenizer_manager.py::collect_metrics calls it once per finished request (an aborted running one included):
        prompt and generation tokens and the request count under ``is_streaming``, the request's own
        ``spec_verify_ct`` (detokenizer_manager.py passes it through from the scheduler's req.spec_verify_ct)
        without it, and only when positive. So over any window, generation tokens / verify calls is the acceptance
        length of the requests that finished in it (their tokens over their verify steps)."""
        labels = self._stream(streaming)
        self.prompt_tokens_total.labels(**labels).inc(prompt_tokens)
        self.generation_tokens_total.labels(**labels).inc(completion_tokens)
        if verify_ct > 0:
            self.spec_verify_calls_total.labels(**self.tok_labels).inc(verify_ct)
        self.num_requests_total.labels(**labels).inc(1)
        self.e2e_request_latency.labels(**labels).observe(e2e_seconds)

    def aborted(self) -> None:
        """tokenizer_manager.py::TokenizerManager.abort_request → observe_one_aborted_request(self.labels): once per
        abort of a request the scheduler had been sent (a client gone mid-generation), whether it was still waiting
        or running."""
        self.num_aborted_requests_total.labels(**self.tok_labels).inc(1)

    def loads_served(self, seconds: float) -> None:
        # v1_loads.py::get_loads observes it (wall seconds) once the snapshots are read
        self.get_loads_duration.labels(**self.tok_labels).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self._exposed)
