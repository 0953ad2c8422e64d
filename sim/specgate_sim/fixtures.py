"""Fixture model repos for the local hub: a tiny Kimi-K2.6-like MoE target, DFlash drafters, broken drafters.

`python -m specgate_sim.fixtures --out DIR [--sparse-target-gb N]` writes a hub root (see `specgate_sim.hub`):

    DIR/<org>/<name>/repo.json              {"gated": bool, "branches": {"main": <sha>}}
    DIR/<org>/<name>/<40-hex commit sha>/   the files of that commit (a plain model directory)

Everything is deterministic: the same arguments give byte-identical files and the same commit shas, so a test
can pin a revision by sha and a pre-staged copy made by a second run is identical to what the hub serves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from specgate_sim.tokenization import (
    BYTE_TOKENS,
    MASK_TOKEN,
    SPECIAL_TOKENS,
    build_fixture_tokenizer,
    fixture_tokenizer_files,
)

ORG = "specgate-fixtures"
TARGET = f"{ORG}/kimi-k26-tiny"
TARGET_GATED = f"{ORG}/kimi-k26-tiny-gated"
TARGET_SPARSE = f"{ORG}/kimi-k26-sparse"
DRAFTER_B8 = f"{ORG}/kimi-k26-dflash-b8"
DRAFTER_B16 = f"{ORG}/kimi-k26-dflash-b16"
BROKEN_MASK_STRING = f"{ORG}/dflash-broken-mask-string"
BROKEN_LAYER_IDS = f"{ORG}/dflash-broken-layer-ids"
BROKEN_NO_BLOCK_SIZE = f"{ORG}/dflash-broken-no-block-size"
BROKEN_DRAFTERS = (BROKEN_MASK_STRING, BROKEN_LAYER_IDS, BROKEN_NO_BLOCK_SIZE)

TARGET_LAYERS = 8
HIDDEN = 64
# Real checkpoints pad the embedding past the tokenizer; the drafter's mask id must stay below this.
VOCAB_SIZE = 320
MASK_TOKEN_ID = BYTE_TOKENS + SPECIAL_TOKENS.index(MASK_TOKEN)
# A shard the hub and huggingface_hub treat like a real one; HF's shards are ~5-10 GB.
SPARSE_SHARD_BYTES = 8 * 1000**3


@dataclass
class RepoCommit:
    """One commit of a fixture repo: file path → bytes, or → a sparse size for the large-shard fixture."""

    files: dict[str, bytes] = field(default_factory=dict)
    sparse: dict[str, tuple[bytes, int]] = field(default_factory=dict)

    def commit_sha(self, parent: str | None) -> str:
        """A git-like commit id: sha1 over the parent and every file's path, size and content digest."""
        digest = hashlib.sha1(usedforsecurity=False)
        digest.update((parent or "").encode())
        for path in sorted(self.files):
            digest.update(f"{path}\0{len(self.files[path])}\0".encode())
            digest.update(hashlib.sha256(self.files[path]).digest())
        for path in sorted(self.sparse):
            head, size = self.sparse[path]
            digest.update(f"{path}\0{size}\0sparse\0".encode())
            digest.update(hashlib.sha256(head).digest())
        return digest.hexdigest()


def target_config(num_layers: int = TARGET_LAYERS) -> dict:
    """A Kimi K2 / DeepSeek-V3 style MoE config, shrunk: the field names SGLang and transformers read."""
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",  # Kimi K2 is DeepSeek-V3 shaped; transformers loads it without remote code
        "torch_dtype": "float16",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": HIDDEN,
        "intermediate_size": 4 * HIDDEN,
        "moe_intermediate_size": HIDDEN,
        "num_hidden_layers": num_layers,
        # 8 heads: the demo serves it with tp_size 8, and SGLang splits the heads over the attention-TP group.
        "num_attention_heads": 8,
        "num_key_value_heads": 8,
        "n_shared_experts": 1,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "routed_scaling_factor": 2.827,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "n_group": 1,
        "topk_group": 1,
        "norm_topk_prob": True,
        "kv_lora_rank": 32,
        "q_lora_rank": 48,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "v_head_dim": 16,
        "max_position_embeddings": 4096,
        "rope_theta": 50000.0,
        "rope_scaling": {
            "type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 1024,
            "beta_fast": 1.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        "rms_norm_eps": 1e-6,
        "bos_token_id": BYTE_TOKENS + SPECIAL_TOKENS.index("<|bos|>"),
        "eos_token_id": BYTE_TOKENS + SPECIAL_TOKENS.index("<|eos|>"),
        "tie_word_embeddings": False,
    }


def dflash_config(block_size: int, num_layers: int, target_layer_ids: list[int]) -> dict:
    """A DFlash drafter config as SGLang's parse_dflash_draft_config reads it (dflash_config.* first)."""
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "torch_dtype": "float16",
        "hidden_size": HIDDEN,
        "intermediate_size": 2 * HIDDEN,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "num_hidden_layers": num_layers,
        "num_target_layers": TARGET_LAYERS,
        "vocab_size": VOCAB_SIZE,
        "rms_norm_eps": 1e-6,
        "dflash_config": {
            "block_size": block_size,
            "target_layer_ids": target_layer_ids,
            "mask_token": MASK_TOKEN,
            "mask_token_id": MASK_TOKEN_ID,
        },
    }


# The fixture tokenizer lives in tokenization.py, beside the code that counts with it in the server.
build_tokenizer = build_fixture_tokenizer
tokenizer_files = fixture_tokenizer_files


def _json_bytes(data: Mapping) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def _safetensors_bytes(tensors: dict[str, np.ndarray], tmp_dir: Path) -> bytes:
    # safetensors writes to a path; a scratch file keeps the bytes in memory for hashing and copying.
    scratch = tmp_dir / ".scratch.safetensors"
    save_file(tensors, str(scratch), metadata={"format": "pt"})
    data = scratch.read_bytes()
    scratch.unlink()
    return data


def _layer_tensors(rng: np.random.Generator, layer: int, dense: bool) -> dict[str, np.ndarray]:
    prefix = f"model.layers.{layer}"

    def weight(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)

    tensors = {
        f"{prefix}.input_layernorm.weight": np.ones(HIDDEN, dtype=np.float16),
        f"{prefix}.self_attn.q_a_proj.weight": weight(48, HIDDEN),
        f"{prefix}.self_attn.kv_a_proj_with_mqa.weight": weight(32 + 8, HIDDEN),
        f"{prefix}.self_attn.o_proj.weight": weight(HIDDEN, 4 * 16),
    }
    if dense:
        tensors[f"{prefix}.mlp.gate_proj.weight"] = weight(4 * HIDDEN, HIDDEN)
        tensors[f"{prefix}.mlp.down_proj.weight"] = weight(HIDDEN, 4 * HIDDEN)
    else:
        tensors[f"{prefix}.mlp.gate.weight"] = weight(8, HIDDEN)
        for expert in range(8):
            tensors[f"{prefix}.mlp.experts.{expert}.up_proj.weight"] = weight(HIDDEN, HIDDEN)
    return tensors


def target_commit(tmp_dir: Path, shards: int = 4, readme: str = "") -> RepoCommit:
    """The tiny target: config, tokenizer, `shards` safetensors files and their index."""
    rng = np.random.default_rng(20260)
    commit = RepoCommit()
    config = target_config()
    commit.files["config.json"] = _json_bytes(config)
    commit.files["generation_config.json"] = _json_bytes({"bos_token_id": config["bos_token_id"], "do_sample": False})
    commit.files.update(tokenizer_files())
    if readme:
        commit.files["README.md"] = readme.encode()
    per_shard: list[dict[str, np.ndarray]] = [{} for _ in range(shards)]
    per_shard[0]["model.embed_tokens.weight"] = rng.standard_normal((VOCAB_SIZE, HIDDEN)).astype(np.float16)
    for layer in range(TARGET_LAYERS):
        shard = layer * shards // TARGET_LAYERS
        per_shard[shard].update(_layer_tensors(rng, layer, dense=layer < config["first_k_dense_replace"]))
    per_shard[-1]["lm_head.weight"] = rng.standard_normal((VOCAB_SIZE, HIDDEN)).astype(np.float16)
    weight_map: dict[str, str] = {}
    total = 0
    for index, tensors in enumerate(per_shard, start=1):
        name = f"model-{index:05d}-of-{shards:05d}.safetensors"
        commit.files[name] = _safetensors_bytes(tensors, tmp_dir)
        total += sum(int(t.nbytes) for t in tensors.values())
        weight_map.update(dict.fromkeys(tensors, name))
    commit.files["model.safetensors.index.json"] = _json_bytes(
        {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    )
    return commit


def sparse_target_commit(total_gb: float) -> RepoCommit:
    """A target whose shards add up to `total_gb` GB by st_size while only their headers take disk space.

    Each shard is a valid safetensors file: one U8 tensor spans the data area, which is a hole (reads as zeros).
    """
    total = int(total_gb * 1000**3)
    count = max(1, -(-total // SPARSE_SHARD_BYTES))
    commit = RepoCommit()
    commit.files["config.json"] = _json_bytes(target_config())
    commit.files.update(tokenizer_files())
    weight_map = {}
    remaining = total
    for index in range(1, count + 1):
        name = f"model-{index:05d}-of-{count:05d}.safetensors"
        size = min(SPARSE_SHARD_BYTES, remaining)
        remaining -= size
        head = _sparse_safetensors_head(name, size)
        commit.sparse[name] = (head, size)
        weight_map[f"sparse.{index}.bytes"] = name
    commit.files["model.safetensors.index.json"] = _json_bytes(
        {"metadata": {"total_size": total}, "weight_map": weight_map}
    )
    return commit


def _sparse_safetensors_head(name: str, size: int) -> bytes:
    # The header length changes the data length, which changes the header: iterate to the fixed point.
    data_len = size - 8
    for _ in range(4):
        header = json.dumps(
            {"__metadata__": {"format": "pt", "shard": name}, "padding": {"dtype": "U8", "shape": [data_len],
                                                                       "data_offsets": [0, data_len]}}
        ).encode()
        header += b" " * (-len(header) % 8)
        new_len = size - 8 - len(header)
        if new_len == data_len:
            return len(header).to_bytes(8, "little") + header
        data_len = new_len
    raise RuntimeError(f"safetensors header for {name} did not converge")


def drafter_commit(tmp_dir: Path, config: dict, seed: int) -> RepoCommit:
    """A DFlash drafter: config.json plus one small safetensors file sized by its layer count."""
    rng = np.random.default_rng(seed)
    layers = config.get("num_hidden_layers", 1)
    tensors = {
        "fc.weight": rng.standard_normal((HIDDEN, HIDDEN * 4)).astype(np.float16),
        "norm.weight": np.ones(HIDDEN, dtype=np.float16),
    }
    for layer in range(layers):
        tensors[f"layers.{layer}.self_attn.q_proj.weight"] = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float16)
        tensors[f"layers.{layer}.mlp.down_proj.weight"] = rng.standard_normal((HIDDEN, 2 * HIDDEN)).astype(np.float16)
    weights = _safetensors_bytes(tensors, tmp_dir)
    return RepoCommit(files={"config.json": _json_bytes(config), "model.safetensors": weights})


def fixture_repos(tmp_dir: Path, sparse_target_gb: float | None = None) -> dict[str, tuple[bool, list[RepoCommit]]]:
    """Every fixture repo: name → (gated, commits oldest first; the last one is `main`)."""
    spread = [1, 3, 5]
    first = target_commit(tmp_dir, readme="")
    main = target_commit(tmp_dir, readme="# kimi-k26-tiny\n\nA fixture target for specgate's tests.\n")
    b8 = dflash_config(8, 6, spread)
    b16 = dflash_config(16, 4, spread)
    mask_string = dflash_config(8, 6, spread)
    mask_string["dflash_config"]["mask_token_id"] = str(MASK_TOKEN_ID)
    layer_ids = dflash_config(8, 6, [1, 5, TARGET_LAYERS + 1])
    no_block = dflash_config(8, 6, spread)
    del no_block["dflash_config"]["block_size"]
    repos: dict[str, tuple[bool, list[RepoCommit]]] = {
        TARGET: (False, [first, main]),
        TARGET_GATED: (True, [main]),
        DRAFTER_B8: (False, [drafter_commit(tmp_dir, b8, 8)]),
        DRAFTER_B16: (False, [drafter_commit(tmp_dir, b16, 16)]),
        BROKEN_MASK_STRING: (False, [drafter_commit(tmp_dir, mask_string, 101)]),
        BROKEN_LAYER_IDS: (False, [drafter_commit(tmp_dir, layer_ids, 102)]),
        BROKEN_NO_BLOCK_SIZE: (False, [drafter_commit(tmp_dir, no_block, 103)]),
    }
    if sparse_target_gb:
        repos[TARGET_SPARSE] = (False, [sparse_target_commit(sparse_target_gb)])
    return repos


def write_commit(commit: RepoCommit, directory: Path) -> None:
    """Write one commit's files; sparse files get their head and a hole up to their size (no disk blocks)."""
    directory.mkdir(parents=True, exist_ok=True)
    for path, data in commit.files.items():
        dest = directory / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.is_file() or dest.read_bytes() != data:
            dest.write_bytes(data)
    for path, (head, size) in commit.sparse.items():
        dest = directory / path
        if dest.is_file() and dest.stat().st_size == size:
            continue
        with dest.open("wb") as handle:
            handle.write(head)
            handle.truncate(size)


def write_fixtures(out: Path, sparse_target_gb: float | None = None) -> dict[str, dict]:
    """Write every fixture repo under `out` as a hub root; return name → {gated, commits, main}."""
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict] = {}
    for name, (gated, commits) in fixture_repos(out, sparse_target_gb).items():
        repo_dir = out / name
        parent: str | None = None
        shas = []
        for commit in commits:
            parent = commit.commit_sha(parent)
            shas.append(parent)
            write_commit(commit, repo_dir / parent)
        meta = {"gated": gated, "branches": {"main": shas[-1]}, "commits": shas}
        (repo_dir / "repo.json").write_text(json.dumps(meta, indent=2) + "\n")
        summary[name] = {"gated": gated, "commits": shas, "main": shas[-1], "path": str(repo_dir / shas[-1])}
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specgate_sim.fixtures", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="hub root to write the fixture repos into")
    parser.add_argument(
        "--sparse-target-gb", type=float, default=None,
        help=f"also write {TARGET_SPARSE}: shards adding up to N GB by size, taking almost no disk",
    )
    args = parser.parse_args(argv)
    if args.sparse_target_gb is not None and args.sparse_target_gb <= 0:
        parser.error(f"--sparse-target-gb must be > 0, got {args.sparse_target_gb}")
    summary = write_fixtures(args.out, args.sparse_target_gb)
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write(os.linesep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
