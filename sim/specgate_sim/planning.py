"""What a request will answer: code for a known coding-eval prompt, filler text otherwise."""

from __future__ import annotations

from dataclasses import dataclass

from specgate_sim import codebank, text
from specgate_sim.engine import Job
from specgate_sim.tokenization import ModelTokenizer

DEFAULT_MAX_NEW_TOKENS = 128  # sglang 0.5.23: srt/sampling/sampling_params.py default
UNBOUNDED_MAX_NEW_TOKENS = 2048  # chat without max_tokens: SGLang would go to the context limit
TOY = ModelTokenizer(None, text.EOS_TOKEN_ID, "toy rule")  # no model tokenizer given (unit tests)


@dataclass(frozen=True)
class Quality:
    seed: int
    wrong_fraction: float
    truncate_fraction: float


def chat_prompt(messages: list[dict[str, object]]) -> str:
    """A Kimi-style chat template; only the token count and the words matter to the sim."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"<|im_{message.get('role', 'user')}|>{content or ''}<|im_end|>")
    return "".join(parts) + "<|im_assistant|>"


def plan(
    prompt: str | None,
    prompt_ids: list[int] | None,
    *,
    max_new_tokens: int | None,
    ignore_eos: bool,
    quality: Quality,
    streaming: bool,
    tokenizer: ModelTokenizer | None = None,
) -> Job:
    """The request's answer, cut into the served model's tokens (``tokenizer``; the toy rule when None)."""
    tk = tokenizer or TOY
    prompt_tokens = len(prompt_ids) if prompt_ids is not None else tk.count(prompt or "")
    key = prompt if prompt is not None else ",".join(map(str, prompt_ids or []))
    seed = text.stable_hash(quality.seed, key, max_new_tokens, ignore_eos)
    kind = text.classify(prompt) if prompt is not None else "chat"
    limit = max_new_tokens if max_new_tokens is not None else UNBOUNDED_MAX_NEW_TOKENS
    name = codebank.find_function(prompt) if prompt is not None else None
    pieces: list[str] = []
    ids: list[int] = []
    natural_end = False
    if name is not None:
        variant = codebank.variant_for(name, quality.seed, quality.wrong_fraction, quality.truncate_fraction)
        answer, natural_end = codebank.answer(name, variant)
        kind = "code"
        pieces, ids = tk.split(answer)
        if not natural_end:
            # a truncated answer is one that ran into the token limit: cap the limit there
            limit = min(limit, len(pieces))
    if ignore_eos or name is None:
        more_pieces, more_ids = tk.filler(max(limit - len(pieces), 0), seed)
        pieces, ids = pieces + more_pieces, ids + more_ids
        natural_end = False
    if len(pieces) > limit:
        pieces, ids, natural_end = pieces[:limit], ids[:limit], False
    if natural_end:
        finish: dict[str, object] = {"type": "stop", "matched": tk.eos_token_id}
    else:
        finish = {"type": "length", "length": len(pieces)}
    return Job(
        prompt_tokens=prompt_tokens,
        pieces=pieces,
        finish_reason=finish,
        kind=kind,
        seed=seed,
        streaming=streaming,
        output_ids=ids,
    )
