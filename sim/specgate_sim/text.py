"""Deterministic toy tokenizer, prompt classification and filler text.

The server counts with the served model's own tokenizer (tokenization.py); this toy rule is its fallback for a
model directory without a tokenizer.json, and the unit tests' stand-in. The toy tokenizer cuts text into pieces
of at most four word characters (with their leading
whitespace) or single punctuation marks, so ``decode(encode(text)) == text`` and a token is
about four characters, like a BPE tokenizer on English.
"""

from __future__ import annotations

import random
import re
import zlib

VOCAB_SIZE = 163840  # Kimi K2's vocabulary size; ids only need to be stable and in range
EOS_TOKEN_ID = 163586

_PIECE = re.compile(r"\s*[A-Za-z0-9_]{1,4}|\s*[^\sA-Za-z0-9_]|\s+")

_CODE_HINTS = re.compile(
    r"```|\bdef \w+\(|\bfunction\b|\bpython\b|\bimplement|\bcode\b|\bclass \w+|\breturn\b|\bjavascript\b|\bbug\b",
    re.IGNORECASE,
)
_MATH_HINTS = re.compile(
    r"\bsolve\b|\bcalculate\b|\bcompute\b|\bequation\b|\bprove\b|\bhow many\b|\binteger\b|\bsum of\b"
    r"|\d+\s*[-+*/^=]\s*\d+|\bmath\b|\bprobability\b",
    re.IGNORECASE,
)

_FILLER_TEXT = (
    "the model answers with a steady stream of plain words so that every request gets exactly the length it "
    "asked for and the numbers stay comparable between runs while nothing here means anything in particular "
    "beyond being text of a realistic shape"
)
FILLER_WORDS = tuple(_FILLER_TEXT.split())


def pieces(text: str) -> list[str]:
    return _PIECE.findall(text)


def token_id(piece: str) -> int:
    return zlib.crc32(piece.encode()) % VOCAB_SIZE


def encode(text: str) -> list[int]:
    return [token_id(p) for p in pieces(text)]


def count_tokens(text: str) -> int:
    return len(pieces(text))


def classify(text: str) -> str:
    """Prompt kind for the acceptance model: "code", "math" or "chat"."""
    if _CODE_HINTS.search(text):
        return "code"
    if _MATH_HINTS.search(text):
        return "math"
    return "chat"


def filler(n_tokens: int, seed: int) -> list[str]:
    """``n_tokens`` pieces of word salad, the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n_tokens:
        word = rng.choice(FILLER_WORDS)
        out.extend(pieces(" " + word))
    return out[:n_tokens]


def stable_hash(*parts: object) -> int:
    """A hash that, unlike ``hash()``, is the same in every process."""
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode())
