"""Token counts and token-sized output pieces with the served model's own tokenizer, as SGLang counts.

sglang 0.5.23: srt/managers/tokenizer_manager.py::TokenizerManager.__init__ loads
``get_tokenizer(server_args.tokenizer_path, ...)`` (srt/utils/hf_transformers/tokenizer.py: the model's fast
tokenizer, i.e. its ``tokenizer.json``), and ``_tokenize_texts`` encodes a text prompt with it (special tokens as
the tokenizer's post-processor adds them); ``meta_info.prompt_tokens`` and ``usage.prompt_tokens`` are the length
of those ids. Output ids go through the detokenizer (srt/managers/detokenizer_manager.py), so a client that
retokenizes the output text with the same tokenizer counts what the server counted.

The sim does the same: it loads ``tokenizer.json`` from the tokenizer path (the model path unless
``--tokenizer-path`` says otherwise) with the ``tokenizers`` library that transformers' fast tokenizers wrap,
counts prompts with it, and cuts its planned output into that tokenizer's tokens. A model directory without a
``tokenizer.json`` (SGLang would refuse it) falls back to the sim's toy rule (``text.pieces``), with a warning.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from specgate_sim import text

log = logging.getLogger("sglang.srt.managers.tokenizer_manager")

# The fixture tokenizer (fixtures.py ships it in every fixture model repo): byte-level BPE over the 256 byte
# symbols plus these special tokens, no merges, so one token per UTF-8 byte.
SPECIAL_TOKENS = ("<|bos|>", "<|eos|>", "<|MASK|>", "<|pad|>")
BYTE_TOKENS = 256
MASK_TOKEN = "<|MASK|>"


def build_fixture_tokenizer() -> Tokenizer:
    """A byte-level BPE over the 256 byte symbols plus the special tokens: encodes any text, no training needed."""
    byte_symbols = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(byte_symbols))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    return tokenizer


def _json_bytes(data: dict) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def fixture_tokenizer_files() -> dict[str, bytes]:
    """tokenizer.json + tokenizer_config.json + special_tokens_map.json, loadable by transformers' AutoTokenizer."""
    tokenizer_json = build_fixture_tokenizer().to_str(pretty=True).encode()
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|bos|>",
        "eos_token": "<|eos|>",
        "pad_token": "<|pad|>",
        "mask_token": MASK_TOKEN,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
    }
    return {
        "tokenizer.json": tokenizer_json,
        "tokenizer_config.json": _json_bytes(config),
        "special_tokens_map.json": _json_bytes(
            {"bos_token": "<|bos|>", "eos_token": "<|eos|>", "pad_token": "<|pad|>", "mask_token": MASK_TOKEN}
        ),
    }


class ModelTokenizer:
    """The served model's tokenizer (``tokenizers`` over its tokenizer.json), or the toy rule when it has none."""

    def __init__(self, tokenizer: Tokenizer | None, eos_token_id: int | None, source: str) -> None:
        self._tk = tokenizer
        self.eos_token_id = eos_token_id
        self.source = source  # the tokenizer.json path, or "toy rule"

    @classmethod
    def load(cls, path: str | None) -> ModelTokenizer:
        tokenizer_json = Path(path) / "tokenizer.json" if path else None
        if tokenizer_json is None or not tokenizer_json.is_file():
            log.warning(
                "specgate-sim: no tokenizer.json in %s; counting tokens with the sim's toy rule (about 4 characters "
                "a token). SGLang would refuse to start without the model's tokenizer.",
                path,
            )
            return cls(None, text.EOS_TOKEN_ID, "toy rule")
        tokenizer = Tokenizer.from_file(str(tokenizer_json))
        return cls(tokenizer, _eos_token_id(tokenizer, tokenizer_json.parent), str(tokenizer_json))

    def count(self, prompt: str) -> int:
        if self._tk is None:
            return text.count_tokens(prompt)
        return len(self._tk.encode(prompt).ids)

    def split(self, output: str) -> tuple[list[str], list[int]]:
        """``output`` as the tokenizer's tokens: (text of each token, its id); the pieces join back to ``output``.
        A token that ends inside a multi-byte character carries no text; the character comes with its last byte,
        as SGLang's incremental detokenizer holds back an incomplete character."""
        if self._tk is None:
            pieces = text.pieces(output)
            return pieces, [text.token_id(p) for p in pieces]
        encoding = self._tk.encode(output, add_special_tokens=False)
        offsets = encoding.offsets
        pieces, done = [], 0
        for i, (_start, stop) in enumerate(offsets):
            if i + 1 < len(offsets) and offsets[i + 1][0] < stop:  # the next token is the same character's next byte
                pieces.append("")
                continue
            end = max(stop, done)
            pieces.append(output[done:end])
            done = end
        if pieces and done < len(output):
            pieces[-1] += output[done:]
        return pieces, list(encoding.ids)

    def filler(self, n_tokens: int, seed: int) -> tuple[list[str], list[int]]:
        """Exactly ``n_tokens`` tokens of word salad, the same for the same seed."""
        if n_tokens <= 0:
            return [], []
        if self._tk is None:
            pieces = text.filler(n_tokens, seed)
            return pieces, [text.token_id(p) for p in pieces]
        rng = random.Random(seed)
        words: list[str] = []
        length = 0  # of the text so far: each word and the space before it (kept as words come, not summed again)
        pieces: list[str] = []
        ids: list[int] = []
        while len(ids) < n_tokens:
            # a token is at least one character of this ASCII text, so this many more characters suffice or close
            while length < 2 * n_tokens + 8 or not words:
                words.append(rng.choice(text.FILLER_WORDS))
                length += len(words[-1]) + 1
            pieces, ids = self.split(" " + " ".join(words))
            more = [rng.choice(text.FILLER_WORDS) for _ in range(8)]
            words += more
            length += sum(len(w) + 1 for w in more)
        return pieces[:n_tokens], ids[:n_tokens]


def _eos_token_id(tokenizer: Tokenizer, directory: Path) -> int | None:
    """The id of the tokenizer config's eos_token (what a stop on EOS reports as matched_stop)."""
    config_path = directory / "tokenizer_config.json"
    try:
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    except (OSError, ValueError):
        config = {}
    eos = config.get("eos_token") if isinstance(config, dict) else None
    if isinstance(eos, dict):
        eos = eos.get("content")
    return tokenizer.token_to_id(eos) if isinstance(eos, str) else None
