"""SGLang 0.5.23's HTTP contract, for the endpoints and fields specgate uses.

Each handler names the wheel file and function it mirrors (paths inside the sglang 0.5.23 wheel).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from specgate_sim import SGLANG_VERSION, loads
from specgate_sim.engine import Engine, Job
from specgate_sim.metrics import CONTENT_TYPE, Metrics
from specgate_sim.planning import DEFAULT_MAX_NEW_TOKENS, TOY, Quality, chat_prompt, plan
from specgate_sim.resolve import Resolved
from specgate_sim.tokenization import ModelTokenizer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# sglang 0.5.23: srt/utils/auth.py — levels of the endpoints the sim serves (NORMAL unless listed)
ADMIN_OPTIONAL = frozenset({"/flush_cache"})
# sglang 0.5.23: srt/environ.py SGLANG_REQUEST_STATE_WAIT_TIMEOUT = EnvInt(4): how often a non-streaming request's
# waiter (tokenizer_manager.py::_stream_one_response) looks whether its client is still there (simulated seconds)
REQUEST_STATE_WAIT_TIMEOUT_NS = 4_000_000_000


@dataclass
class ServerState:
    resolved: Resolved
    engine: Engine
    metrics: Metrics | None
    quality: Quality
    launch_command: str
    tokenizer: ModelTokenizer = TOY  # the served model's (tokenization.py); the toy rule when it has none
    phase: str = "starting"  # starting -> up; "shutting_down" once SIGTERM arrives
    accelerator: str | None = None  # torch.cuda.get_device_name() of the simulated host (launch_server.py)
    startup_time: float = field(default_factory=time.time)

    @property
    def args(self) -> dict[str, Any]:
        return self.resolved.args


STATE = web.AppKey("state", ServerState)


def _bearer_ok(header: str | None, expected: str) -> bool:
    # sglang 0.5.23: srt/utils/auth.py::decide_request_auth._check_bearer_token
    if not header:
        return False
    parts = header.split(" ", 1)
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return False
    return secrets.compare_digest(parts[1], expected)


def auth_allows(method: str, path: str, header: str | None, api_key: str | None, admin_key: str | None) -> bool:
    """sglang 0.5.23: srt/utils/auth.py::decide_request_auth (no ADMIN_FORCE endpoint is simulated)."""
    if method == "OPTIONS" or path.startswith(("/health", "/ready", "/metrics")):
        return True
    if path in ADMIN_OPTIONAL:
        if admin_key:
            return _bearer_ok(header, admin_key)
        return _bearer_ok(header, api_key) if api_key else True
    return _bearer_ok(header, api_key) if api_key else True


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    api_key, admin_key = state.args.get("api_key"), state.args.get("admin_api_key")
    if (api_key or admin_key) and not auth_allows(
        request.method, request.path, request.headers.get("Authorization"), api_key, admin_key
    ):
        # sglang 0.5.23: srt/utils/auth.py::add_api_key_middleware — ORJSONResponse {"error": "Unauthorized"}
        return web.json_response({"error": "Unauthorized"}, status=401)
    return await handler(request)


def _error(message: str, status: int = 400) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/openai/protocol.py::ErrorResponse (the legacy 400 shape)
    phrase = {400: "Bad Request", 503: "Service Unavailable"}.get(status, "Error")
    return web.json_response(
        {"object": "error", "message": message, "type": phrase, "param": None, "code": status}, status=status
    )


async def health(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::health_generate (serves /health and /health_generate):
    # 503 while starting or shutting down, else 200 with an empty body
    state = request.app[STATE]
    return web.Response(status=200 if state.phase == "up" else 503)


async def ready(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::ready — tokenizer_manager.is_ready()
    return web.Response(status=200 if request.app[STATE].phase == "up" else 503)


def _model_card(state: ServerState, name: str) -> dict[str, Any]:
    # sglang 0.5.23: srt/entrypoints/openai/protocol.py::ModelCard
    return {
        "id": name,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "sglang",
        "root": name,
        "parent": None,
        "max_model_len": state.args["context_length"],
    }


async def models(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::available_models — answers before the model is ready
    state = request.app[STATE]
    return web.json_response({"object": "list", "data": [_model_card(state, state.resolved.served_model_name)]})


async def retrieve_model(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::retrieve_model
    state = request.app[STATE]
    model = request.match_info["model"]
    if model != state.resolved.served_model_name:
        return web.json_response(
            {
                "error": {
                    "message": f"The model '{model}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
            status=404,
        )
    return web.json_response(_model_card(state, model))


async def model_info(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::model_info
    state = request.app[STATE]
    cfg = state.resolved.target_config
    return web.json_response(
        {
            "model_path": state.args["model_path"],
            "served_model_name": state.resolved.served_model_name,
            "tokenizer_path": state.args["tokenizer_path"],
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "reasoning_parser": state.args.get("reasoning_parser"),
            "tool_call_parser": state.args.get("tool_call_parser"),
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": cfg.get("model_type"),
            "architectures": cfg.get("architectures"),
        }
    )


async def server_info(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::server_info — resolved server args, launch_command,
    # internal_states per DP rank (srt/managers/scheduler_components/internal_state.py), version
    state = request.app[STATE]
    if state.phase != "up":
        return web.Response(status=503)
    internal: dict[str, Any] = {
        **state.args,
        "world_size": state.args["tp_size"] * state.args["pp_size"] * state.args["dp_size"],
        "startup_time": state.startup_time,
        "effective_max_running_requests_per_dp": state.engine.max_running,
        "last_gen_throughput": state.engine.last_gen_throughput,
    }
    avg = state.engine.stats.avg_accept_length
    if avg is not None:  # internal_state.py::_add_speculative: only when speculating and counted
        internal["avg_spec_accept_length"] = avg
    if state.resolved.ddtree_env:
        internal["env_vars"] = dict(state.resolved.ddtree_env)
    body = {
        **state.args,
        "launch_command": state.launch_command,
        "startup_time": state.startup_time,
        "internal_states": [internal],
        "version": SGLANG_VERSION,
        "frontend": "python",
    }
    return web.json_response(body)


async def flush_cache(request: web.Request) -> web.Response:
    # sglang 0.5.23: srt/entrypoints/http_server.py::flush_cache; the scheduler resets its spec counters
    # (metrics_reporter.reset_metrics), so /server_info's average starts over
    state = request.app[STATE]
    state.engine.flush()
    return web.Response(
        text="Cache flushed.\nPlease check backend logs for more details. "
        "(When there are running or waiting requests, the operation will not be performed.)\n"
    )


async def metrics(request: web.Request) -> web.Response:
    # sglang 0.5.23: /metrics exists only with --enable-metrics (prometheus ASGI app mounted at startup)
    state = request.app[STATE]
    if state.metrics is None:
        raise web.HTTPNotFound()
    return web.Response(body=state.metrics.render(), headers={"Content-Type": CONTENT_TYPE})


# sglang 0.5.23: FastAPI parses an Optional[int] query parameter with pydantic's lax int: surrounding space, a sign,
# digit underscores and a zero fraction ("1.0") pass; anything else is a validation error
_LAX_INT = re.compile(r"[+-]?\d+(_\d+)*(\.0+)?")


def _query_int(request: web.Request, name: str) -> tuple[int | None, web.Response | None]:
    values = request.query.getall(name, [])
    if not values:
        return None, None
    raw = values[-1]  # starlette's QueryParams keeps the last of repeated keys
    if _LAX_INT.fullmatch(raw.strip()):
        return int(raw.strip().split(".")[0].replace("_", "")), None
    # http_server.py::validation_exception_handler: FastAPI's 422 becomes the legacy 400 ErrorResponse, its message
    # str(RequestValidationError) then str(exc.errors()) (the endpoint's file and line as FastAPI names them)
    error = {
        "type": "int_parsing",
        "loc": ("query", name),
        "msg": "Input should be a valid integer, unable to parse string as an integer",
        "input": raw,
    }
    message = (
        f"1 validation error:\n  {error!r}\n\n"
        f'  File "sglang/srt/entrypoints/v1_loads.py", line 96, in get_loads\n'
        f"    GET {request.path} {[error]!r}"
    )
    return None, _error(message)


def _query_str(request: web.Request, name: str) -> str | None:
    values = request.query.getall(name, [])
    return values[-1] if values else None


async def v1_loads(request: web.Request) -> web.Response:
    """sglang 0.5.23 srt/entrypoints/v1_loads.py::get_loads — the scheduler's last published load snapshot per DP
    rank (tokenizer_control_mixin.py::get_loads; engine.py::Engine.publish_load), answered in every phase in which
    the port is bound. Query: ``dp_rank`` (another rank than 0..num_dp_ranks-1 → ``loads: []``), ``include``
    (comma-separated core, memory, spec, lora, disagg, queues, all; default all), ``format=prometheus``."""
    state = request.app[STATE]
    dp_rank, refused = _query_int(request, "dp_rank")
    if refused is not None:
        return refused
    include_raw, fmt = _query_str(request, "include"), _query_str(request, "format")
    include_list = [s.strip() for s in include_raw.split(",")] if include_raw else None
    start = time.perf_counter()
    # One simulated scheduler: every request is on DP rank 0; further ranks (dp_size x attn_dp_size > 1) publish
    # idle snapshots of the same moment.
    current = state.engine.load
    ranks = [current]
    for rank in range(1, loads.num_dp_ranks(state.args)):
        ranks.append(
            loads.LoadSnapshot(
                timestamp=current.timestamp,
                dp_rank=rank,
                max_total_num_tokens=current.max_total_num_tokens,
                max_running_requests=current.max_running_requests,
                disaggregation=current.disaggregation,
                queues=None if current.queues is None else loads.queues(0),
            )
        )
    if dp_rank is not None:
        ranks = [r for r in ranks if r.dp_rank == dp_rank]
    if state.metrics is not None:
        state.metrics.loads_served(time.perf_counter() - start)
    include_set = set(include_list) if include_list else None
    try:
        if fmt == "prometheus":
            text = loads.format_prometheus(ranks, include_set)
            return web.Response(body=text.encode(), headers={"Content-Type": loads.PROMETHEUS_CONTENT_TYPE})
        body = [r.to_dict(include_set) for r in ranks]
    except ValueError:
        # LoadSnapshot.to_dict raises outside the handler's try (which only wraps tokenizer_manager.get_loads):
        # an unknown section is starlette's plain 500, unless no load was there to render
        return web.Response(status=500, text="Internal Server Error")
    return web.json_response(
        {
            "timestamp": datetime.now(timezone.utc).isoformat(),
            "version": SGLANG_VERSION,
            "accelerator": state.accelerator,
            "num_accelerators": loads.num_accelerators(state.args),
            "loads": body,
        }
    )


# ---------------------------------------------------------------- generation


def _meta_info(state: ServerState, rid: str, job: Job, emitted: int, finished: bool) -> dict[str, Any]:
    # sglang 0.5.23: srt/managers/tokenizer_manager.py (meta_info = {...}, then _calculate_spec_decoding_metrics)
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": job.finish_reason if finished else None,
        "prompt_tokens": job.prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
        "reasoning_tokens": 0,
        "completion_tokens": emitted,
        "cached_tokens": 0,
    }
    if job.verify_ct > 0:
        proposed = job.verify_ct * (state.engine.num_draft_tokens or 1) - job.verify_ct
        if proposed > 0:
            meta["spec_accept_rate"] = job.correct_drafts / proposed
            meta["spec_accept_length"] = emitted / job.verify_ct
            meta["spec_num_correct_drafts"] = job.correct_drafts
            meta["spec_num_proposed_drafts"] = proposed
            meta["spec_verify_ct"] = job.verify_ct
        if any(job.histogram):
            meta["spec_correct_drafts_histogram"] = list(job.histogram)
    if finished:
        meta["e2e_latency"] = job.e2e_seconds
    return meta


def _not_ready(state: ServerState) -> web.Response | None:
    if state.phase != "up":
        return _error("The server is not ready to accept requests.", 503)
    return None


async def _json(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error("Invalid JSON body")
    if not isinstance(body, dict):
        return _error("The request body must be a JSON object")
    return body


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _run_to_end(state: ServerState, job: Job, request: web.Request) -> bool:
    """A non-streaming request: run it to the end; False once its client is found gone. As
    tokenizer_manager.py::_stream_one_response, the sim looks every SGLANG_REQUEST_STATE_WAIT_TIMEOUT (4 s) and, on a
    disconnect, aborts the request (closing the engine's generator counts the abort: engine.py::Engine.generate)."""
    engine = state.engine
    last_look = engine.clock_ns
    async with contextlib.aclosing(engine.generate(job)) as steps:
        async for _ in steps:
            if engine.clock_ns - last_look >= REQUEST_STATE_WAIT_TIMEOUT_NS:
                last_look = engine.clock_ns
                if _client_gone(request) and not job.done:
                    return False
    return True


def _disconnected(rid: str) -> web.Response:
    # tokenizer_manager.py::_stream_one_response raises this ValueError; http_server.py answers it with the legacy
    # 400 error (no client is left to read it)
    return _error(f"Request is disconnected from the client side (type 1). Abort request obj.rid='{rid}'")


async def generate(request: web.Request) -> web.StreamResponse:
    # sglang 0.5.23: srt/entrypoints/http_server.py::generate_request / serve_generate_request
    state = request.app[STATE]
    if (refused := _not_ready(state)) is not None:
        return refused
    body = await _json(request)
    if isinstance(body, web.Response):
        return body
    prompt, ids = body.get("text"), body.get("input_ids")
    if (prompt is None) == (ids is None):
        return _error("Either text or input_ids should be provided.")
    if isinstance(prompt, list) or (ids is not None and ids and isinstance(ids[0], list)):
        return _error("specgate-sim serves one prompt per /generate request")
    params = body.get("sampling_params") or {}
    job = plan(
        prompt,
        ids,
        max_new_tokens=int(params.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)),
        ignore_eos=bool(params.get("ignore_eos", False)),
        quality=state.quality,
        streaming=bool(body.get("stream")),
        tokenizer=state.tokenizer,
    )
    rid = str(body.get("rid") or uuid.uuid4().hex)

    def out(emitted: int) -> dict[str, Any]:
        finished = emitted >= len(job.pieces)
        return {
            "text": "".join(job.pieces[:emitted]),
            "output_ids": job.output_ids[:emitted],
            "meta_info": _meta_info(state, rid, job, emitted, finished),
        }

    if not body.get("stream"):
        if not await _run_to_end(state, job, request):
            return _disconnected(rid)
        return web.json_response(out(job.emitted))
    # stream: one `data:` event per step with the text so far (incremental_streaming_output off), then [DONE]
    response = await _sse(request)
    # a client that disconnects mid-stream: the next write fails, which closes the engine's generator (the abort,
    # engine.py::Engine.generate), as starlette's failed send closes http_server.py::stream_results' generator
    with contextlib.suppress(ConnectionResetError):
        async with contextlib.aclosing(state.engine.generate(job)) as steps:
            async for emitted in steps:
                await response.write(b"data: " + json.dumps(out(emitted)).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
    return response


async def _sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response


def _spec_details(state: ServerState, job: Job, rid: str) -> dict[str, Any] | None:
    # sglang 0.5.23: srt/entrypoints/openai/utils.py::spec_tokens_details_from_meta_info
    # builds protocol.py::SpecTokensDetails from meta_info
    meta = _meta_info(state, rid, job, job.emitted, True)
    if "spec_verify_ct" not in meta:
        return None
    return {
        "spec_accept_rate": meta["spec_accept_rate"],
        "spec_accept_length": meta["spec_accept_length"],
        "spec_cap_length": 0.0,
        "spec_block_accept_length": 0.0,
        "spec_num_correct_drafts": meta["spec_num_correct_drafts"],
        "spec_num_proposed_drafts": meta["spec_num_proposed_drafts"],
        "spec_verify_ct": meta["spec_verify_ct"],
        "spec_correct_drafts_histogram": meta.get("spec_correct_drafts_histogram", []),
        "spec_cap_lens_histogram": [],
    }


def _usage(job: Job) -> dict[str, Any]:
    # sglang 0.5.23: srt/entrypoints/openai/protocol.py::UsageInfo
    return {
        "prompt_tokens": job.prompt_tokens,
        "total_tokens": job.prompt_tokens + len(job.pieces),
        "completion_tokens": len(job.pieces),
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
        "completion_tokens_details": None,
    }


def _finish(job: Job) -> tuple[str, Any]:
    reason = job.finish_reason
    return str(reason["type"]), reason.get("matched")


async def openai_completions(request: web.Request) -> web.StreamResponse:
    # sglang 0.5.23: srt/entrypoints/http_server.py::openai_v1_completions → openai/serving_completions.py
    return await _openai(request, chat=False)


async def openai_chat(request: web.Request) -> web.StreamResponse:
    # sglang 0.5.23: srt/entrypoints/http_server.py::openai_v1_chat_completions → openai/serving_chat.py
    return await _openai(request, chat=True)


async def _openai(request: web.Request, *, chat: bool) -> web.StreamResponse:
    state = request.app[STATE]
    if (refused := _not_ready(state)) is not None:
        return refused
    body = await _json(request)
    if isinstance(body, web.Response):
        return body
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error("messages must be a non-empty list")
        prompt: str | None = chat_prompt(messages)
        ids = None
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    else:
        raw = body.get("prompt")
        if isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
            prompt, ids = None, list(raw)
        elif isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], str):
            prompt, ids = raw[0], None
        elif isinstance(raw, str):
            prompt, ids = raw, None
        else:
            return _error("prompt must be a string, a one-string list or a list of token ids")
        max_tokens = body.get("max_tokens", 16)  # protocol.py::CompletionRequest.max_tokens = 16
    if int(body.get("n", 1)) != 1:
        return _error("specgate-sim serves n=1 only")
    stream = bool(body.get("stream"))
    job = plan(
        prompt,
        ids,
        max_new_tokens=int(max_tokens) if max_tokens is not None else None,
        ignore_eos=bool(body.get("ignore_eos", False)),
        quality=state.quality,
        streaming=stream,
        tokenizer=state.tokenizer,
    )
    model = str(body.get("model") or state.resolved.served_model_name)
    rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    created = int(time.time())
    want_spec = bool(body.get("return_spec_tokens_details"))
    obj = "chat.completion" if chat else "text_completion"
    if not stream:
        if not await _run_to_end(state, job, request):
            return _disconnected(rid)
        reason, matched = _finish(job)
        content = "".join(job.pieces)
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": reason, "matched_stop": matched}
        if chat:
            choice["message"] = {"role": "assistant", "content": content, "reasoning_content": None, "tool_calls": None}
        else:
            choice["text"] = content
        response: dict[str, Any] = {
            "id": rid,
            "object": obj,
            "created": created,
            "model": model,
            "choices": [choice],
            "usage": _usage(job),
            "metadata": {"weight_version": "default"},
        }
        # protocol.py: sglext sits on the response (not the choice); spec_tokens_details is one object for n=1
        details = _spec_details(state, job, rid) if want_spec else None
        if details is not None:
            response["sglext"] = {"spec_tokens_details": details}
        return web.json_response(response)
    return await _openai_stream(
        request, state, job, rid=rid, created=created, model=model, chat=chat, want_spec=want_spec
    )


async def _openai_stream(
    request: web.Request,
    state: ServerState,
    job: Job,
    *,
    rid: str,
    created: int,
    model: str,
    chat: bool,
    want_spec: bool,
) -> web.StreamResponse:
    # serving_chat.py / serving_completions.py streaming: deltas, then an sglext chunk with choices=[],
    # then a usage chunk when stream_options.include_usage, then [DONE]
    body_stream_options = (await request.json()).get("stream_options") or {}
    obj = "chat.completion.chunk" if chat else "text_completion"
    response = await _sse(request)

    async def send(payload: dict[str, Any]) -> None:
        await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

    sent = 0
    first = True
    with contextlib.suppress(ConnectionResetError):  # the client went away mid-stream: see generate()
        async with contextlib.aclosing(state.engine.generate(job)) as steps:
            async for emitted in steps:
                delta = "".join(job.pieces[sent:emitted])
                sent = emitted
                done = emitted >= len(job.pieces)
                reason, matched = _finish(job) if done else (None, None)
                if chat:
                    message: dict[str, Any] = {"content": delta, "reasoning_content": None}
                    if first:
                        message["role"] = "assistant"
                    choice: dict[str, Any] = {"index": 0, "delta": message, "logprobs": None}
                else:
                    choice = {"index": 0, "text": delta, "logprobs": None}
                choice.update(finish_reason=reason, matched_stop=matched)
                await send(
                    {"id": rid, "object": obj, "created": created, "model": model, "choices": [choice], "usage": None}
                )
                first = False
        details = _spec_details(state, job, rid) if want_spec else None
        if details is not None:
            await send(
                {
                    "id": rid,
                    "object": obj,
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": None,
                    "sglext": {"spec_tokens_details": details},
                }
            )
        if body_stream_options.get("include_usage"):
            await send(
                {"id": rid, "object": obj, "created": created, "model": model, "choices": [], "usage": _usage(job)}
            )
        await response.write(b"data: [DONE]\n\n")
    return response


def build_app(state: ServerState) -> web.Application:
    app = web.Application(middlewares=[auth_middleware])
    app[STATE] = state
    app.router.add_get("/health", health)
    app.router.add_get("/health_generate", health)
    app.router.add_get("/ready", ready)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/v1/models/{model:.+}", retrieve_model)
    app.router.add_get("/model_info", model_info)
    app.router.add_get("/get_model_info", model_info)
    app.router.add_get("/server_info", server_info)
    app.router.add_get("/get_server_info", server_info)
    app.router.add_route("GET", "/flush_cache", flush_cache)
    app.router.add_route("POST", "/flush_cache", flush_cache)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/v1/loads", v1_loads)
    app.router.add_route("POST", "/generate", generate)
    app.router.add_route("PUT", "/generate", generate)
    app.router.add_post("/v1/completions", openai_completions)
    app.router.add_post("/v1/chat/completions", openai_chat)
    return app
