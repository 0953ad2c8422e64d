"""Parametric speculative-decoding model: acceptance per verify step and step latency.

Pure functions, no I/O. The acceptance side models a drafter proposing, at each depth, a ranked
list of candidate tokens; the target's token sits at rank 1 with probability ``p_d`` and deeper ranks
geometrically less often. A draft *tree* (DDTree, EAGLE top-k) is the set of rank paths a best-first
search keeps under a node budget; the expected committed tokens per verify step is one bonus token
plus the sum of the tree nodes' path probabilities (exactly one path is the target's).

Defaults are calibrated against the ct200 field notes (``specgate_sim.calibrate``).
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field

KINDS = ("code", "math", "chat")

# Reference workload for calibration: the field-notes benchmark used a mixed prompt set; we fix
# it as code:math:chat = 1:1:2 so that chat (the hardest kind) weighs like the other two together.
REFERENCE_MIX: dict[str, float] = {"code": 0.25, "math": 0.25, "chat": 0.5}

ALGORITHMS = ("NONE", "DFLASH", "DDTREE", "EAGLE", "EAGLE3", "NEXTN")


@dataclass(frozen=True)
class AcceptanceParams:
    """Drafter quality. ``first`` is the rank-1 hit rate at depth 1 per prompt kind; it decays by
    ``decay`` per depth while inside the trained block, and by ``beyond`` more per depth past it."""

    first: dict[str, float] = field(default_factory=lambda: {"code": 0.879, "math": 0.879, "chat": 0.7605})
    decay: float = 1.0
    beyond: float = 0.55
    # P(target token at rank r | not at any rank < r) for r >= 2: the drafter's runner-ups are
    # informative but less so than its top choice.
    rank_hit: float = 0.30
    # Algorithm quality relative to a DFlash drafter at its trained block.
    algo_factor: dict[str, float] = field(
        default_factory=lambda: {"DFLASH": 1.0, "DDTREE": 1.0, "EAGLE": 0.93, "EAGLE3": 0.96, "NEXTN": 0.93}
    )
    # Long context hurts a drafter trained on short sequences a little; a sliding window that
    # cuts off context hurts more.
    context_penalty_per_doubling: float = 0.006
    window_penalty: float = 0.06


@dataclass(frozen=True)
class LatencyParams:
    """Step latency in milliseconds for one host profile (default: ct200, TP8, CUDA graphs).

    The target's cost per step is dominated by reading MoE expert weights. Tokens verified together
    (a draft tree, a batch) mostly route to the same experts, so that cost saturates with the number
    of tokens: ``moe_ms * (1 - overlap ** tokens)``. Past ``compute_knee_tokens`` the step turns
    compute-bound and grows linearly.
    """

    dense_ms: float = 1000.0 / 97.9 - 24.0 * (1.0 - 0.85)  # no-spec C=1 step = 1/97.9 s (field notes)
    moe_ms: float = 24.0
    expert_overlap: float = 0.85
    compute_knee_tokens: int = 64
    compute_token_ms: float = 0.45
    draft_pass_ms: float = 2.0  # one DFlash drafter pass over a block (6 small layers)
    eagle_step_ms: float = 1.6  # one autoregressive EAGLE/MTP draft step
    context_ms_per_ktoken: float = 0.012  # KV read per 1k context tokens per request
    prefill_tokens_per_s: float = 12000.0


# Host profiles (SPECGATE_SIM_PROFILE). b300: 8x B300 on NVLink, no speculation 303 / 2.15 = 141 tok/s and
# DFlash 303 tok/s in the field notes; cheaper expert reads and drafter pass than ct200's PCIe.
PROFILES: dict[str, LatencyParams] = {
    "ct200": LatencyParams(),
    "b300": LatencyParams(dense_ms=5.46, moe_ms=10.9, draft_pass_ms=1.0),
}


@dataclass(frozen=True)
class SpecConfig:
    """The resolved speculative setting the engine runs."""

    algorithm: str = "NONE"  # one of ALGORITHMS
    block_size: int = 8  # requested block (DFlash/DDTree) or num_draft_tokens (EAGLE)
    trained_block_size: int = 8  # the drafter's config.json block_size
    budget: int = 7  # DDTree node budget (default block_size - 1)
    topk: int = 1
    num_steps: int = 1  # EAGLE/NEXTN autoregressive draft steps
    window: int | None = None  # drafter sliding window (tokens)
    depth_bonus: float = 0.0  # SGLANG_DDTREE_DEPTH_BONUS: favours deeper nodes in best-first order
    max_topk: int | None = None  # SGLANG_DDTREE_MAX_TOPK: caps top-k

    @property
    def enabled(self) -> bool:
        return self.algorithm != "NONE"


@dataclass(frozen=True)
class Tree:
    """Rank paths kept for verification, e.g. (1, 1, 2) = top-1, top-1, runner-up."""

    paths: frozenset[tuple[int, ...]]

    @property
    def size(self) -> int:
        return len(self.paths)

    @property
    def depth(self) -> int:
        return max((len(p) for p in self.paths), default=0)


def depth_probs(
    cfg: SpecConfig, kind: str, context_tokens: int, params: AcceptanceParams, multiplier: float = 1.0
) -> list[float]:
    """Rank-1 hit probability per depth 1..max depth the configuration can draft."""
    if not cfg.enabled:
        return []
    if cfg.algorithm in ("EAGLE", "EAGLE3", "NEXTN"):
        max_depth = max(cfg.num_steps, 1)
        trained_depth = max_depth
    else:
        max_depth = max(cfg.block_size - 1, 0)
        trained_depth = max(cfg.trained_block_size - 1, 0)
    first = params.first[kind] * params.algo_factor.get(cfg.algorithm, 1.0)
    first *= 1.0 - params.context_penalty_per_doubling * math.log2(1.0 + context_tokens / 4096.0)
    if cfg.window is not None and context_tokens > cfg.window:
        first *= 1.0 - params.window_penalty * (1.0 - cfg.window / context_tokens)
    probs = []
    p = first
    for depth in range(1, max_depth + 1):
        if depth > 1:
            p *= params.decay if depth <= trained_depth else params.decay * params.beyond
        probs.append(min(max(p * multiplier, 0.0), 0.999))
    return probs


def rank_prob(p_top1: float, rank: int, params: AcceptanceParams) -> float:
    """P(the target's token is the drafter's ``rank``-th candidate) at a depth with top-1 rate p."""
    if rank == 1:
        return p_top1
    return (1.0 - p_top1) * params.rank_hit * (1.0 - params.rank_hit) ** (rank - 2)


def build_tree(cfg: SpecConfig, probs: list[float], params: AcceptanceParams) -> Tree:
    """Best-first tree under the node budget and per-node top-k (DDTree); a chain for DFlash."""
    if not probs:
        return Tree(frozenset())
    if cfg.algorithm == "DFLASH":
        return Tree(frozenset(tuple([1] * d) for d in range(1, len(probs) + 1)))
    if cfg.algorithm == "DDTREE":
        budget, topk = cfg.budget, cfg.topk
    else:  # EAGLE family: num_draft_tokens counts the root token
        budget, topk = max(cfg.block_size - 1, 0), cfg.topk
    if cfg.max_topk is not None:
        topk = min(topk, cfg.max_topk)
    topk = max(topk, 1)
    kept: set[tuple[int, ...]] = set()
    # heap of (-priority, path, path probability); priority may favour depth, probability may not
    heap: list[tuple[float, tuple[int, ...], float]] = []

    def push(path: tuple[int, ...], prob: float) -> None:
        priority = prob * (1.0 + cfg.depth_bonus) ** len(path)
        heapq.heappush(heap, (-priority, path, prob))

    for rank in range(1, topk + 1):
        push((rank,), rank_prob(probs[0], rank, params))
    while heap and len(kept) < budget:
        _, path, prob = heapq.heappop(heap)
        kept.add(path)
        depth = len(path)
        if depth < len(probs):
            for rank in range(1, topk + 1):
                push((*path, rank), prob * rank_prob(probs[depth], rank, params))
    return Tree(frozenset(kept))


def expected_accept_length(tree: Tree, probs: list[float], params: AcceptanceParams) -> float:
    """E[tokens committed per verify step], bonus token included."""
    total = 1.0
    for path in tree.paths:
        prob = 1.0
        for depth, rank in enumerate(path):
            prob *= rank_prob(probs[depth], rank, params)
        total += prob
    return total


def sample_accept_length(tree: Tree, probs: list[float], params: AcceptanceParams, rng: random.Random) -> int:
    """Draw one verify step: walk down while the target's token is a kept node."""
    accepted = 1
    path: tuple[int, ...] = ()
    for p in probs:
        u = rng.random()
        rank, cum = 1, p
        while u >= cum and rank < 64:
            rank += 1
            cum += rank_prob(p, rank, params)
        if u >= cum:
            break
        path = (*path, rank)
        if path not in tree.paths:
            break
        accepted += 1
    return accepted


def verify_tokens(cfg: SpecConfig, tree: Tree) -> int:
    """Tokens the target verifies per request per step (tree nodes + the root)."""
    return tree.size + 1 if cfg.enabled else 1


def step_ms(
    cfg: SpecConfig,
    tree: Tree,
    lat: LatencyParams,
    batch: int = 1,
    mean_context_tokens: float = 0.0,
) -> float:
    """Wall time of one decode/verify step for ``batch`` running requests drafting the same tree."""
    return batch_step_ms(cfg, batch * verify_tokens(cfg, tree), batch, mean_context_tokens, lat)


def batch_step_ms(cfg: SpecConfig, tokens: int, batch: int, mean_context_tokens: float, lat: LatencyParams) -> float:
    """One step that verifies ``tokens`` tokens in total for ``batch`` requests."""
    ms = lat.dense_ms + lat.moe_ms * (1.0 - lat.expert_overlap**tokens)
    ms += lat.compute_token_ms * max(tokens - lat.compute_knee_tokens, 0)
    if cfg.algorithm in ("DFLASH", "DDTREE"):
        ms += lat.draft_pass_ms
    elif cfg.enabled:
        ms += lat.eagle_step_ms * max(cfg.num_steps, 1)
    per_request_verify = tokens / max(batch, 1)
    ms += lat.context_ms_per_ktoken * batch * (mean_context_tokens / 1000.0) * (1.0 + per_request_verify / 16.0)
    return ms


def prefill_ms(prompt_tokens: int, lat: LatencyParams) -> float:
    return 1000.0 * prompt_tokens / lat.prefill_tokens_per_s


@dataclass(frozen=True)
class Estimate:
    """Token-weighted over the mix: accept length = tokens / verify steps, as the server counts it."""

    accept_length: float
    tokens_per_s: float


def estimate(
    cfg: SpecConfig,
    *,
    acc: AcceptanceParams | None = None,
    lat: LatencyParams | None = None,
    mix: dict[str, float] | None = None,
    context_tokens: int = 512,
    batch: int = 1,
) -> Estimate:
    """Expected accept length and per-request decode speed over a prompt mix (equal output lengths)."""
    acc = acc or AcceptanceParams()
    lat = lat or LatencyParams()
    mix = mix or REFERENCE_MIX
    steps_per_token = 0.0
    ms_per_token = 0.0
    for kind, weight in mix.items():
        probs = depth_probs(cfg, kind, context_tokens, acc)
        tree = build_tree(cfg, probs, acc)
        tau = expected_accept_length(tree, probs, acc) if cfg.enabled else 1.0
        steps_per_token += weight / tau
        ms_per_token += weight * step_ms(cfg, tree, lat, batch, context_tokens) / tau
    total = sum(mix.values())
    return Estimate(total / steps_per_token, 1000.0 * total / ms_per_token)
