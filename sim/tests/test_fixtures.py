"""Fixture repos: what specgate's weights tests rely on (real tokenizer, valid shards, drafter fields)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from safetensors import safe_open
from specgate_sim import fixtures
from transformers import AutoTokenizer


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("fixtures")
    return root, fixtures.write_fixtures(root, sparse_target_gb=550)


def _main_dir(hub_root: tuple[Path, dict], repo: str) -> Path:
    return Path(hub_root[1][repo]["path"])


def _tree_digest(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.stat().st_size < 10**8}


def test_fixtures_are_byte_identical_across_runs(hub_root, tmp_path):
    again = fixtures.write_fixtures(tmp_path)
    for repo in (fixtures.TARGET, fixtures.DRAFTER_B8, fixtures.BROKEN_LAYER_IDS):
        assert again[repo]["commits"] == hub_root[1][repo]["commits"]
        assert _tree_digest(Path(again[repo]["path"])) == _tree_digest(_main_dir(hub_root, repo))


def test_target_has_two_commits_and_main_is_the_newest(hub_root):
    root, summary = hub_root
    target = summary[fixtures.TARGET]
    assert len(target["commits"]) == 2
    assert target["commits"][0] != target["main"]
    meta = json.loads((root / fixtures.TARGET / "repo.json").read_text())
    assert meta["branches"] == {"main": target["main"]}
    assert not (root / fixtures.TARGET / target["commits"][0] / "README.md").exists()
    assert (root / fixtures.TARGET / target["main"] / "README.md").exists()


def test_target_config_is_a_deepseek_v3_style_moe_like_kimi_k2(hub_root):
    config = json.loads((_main_dir(hub_root, fixtures.TARGET) / "config.json").read_text())
    assert config["architectures"] == ["DeepseekV3ForCausalLM"]
    assert config["model_type"] == "deepseek_v3"
    assert config["num_hidden_layers"] == fixtures.TARGET_LAYERS
    assert config["n_routed_experts"] > config["num_experts_per_tok"] >= 1
    for key in ("kv_lora_rank", "q_lora_rank", "first_k_dense_replace", "qk_rope_head_dim", "vocab_size"):
        assert isinstance(config[key], int), key


def test_tokenizer_loads_with_autotokenizer_and_knows_the_mask_token(hub_root):
    tokenizer = AutoTokenizer.from_pretrained(_main_dir(hub_root, fixtures.TARGET))
    ids = tokenizer("def fib(n): return n")["input_ids"]
    assert tokenizer.decode(ids) == "def fib(n): return n"
    assert tokenizer.convert_tokens_to_ids(fixtures.MASK_TOKEN) == fixtures.MASK_TOKEN_ID
    assert len(tokenizer) <= fixtures.VOCAB_SIZE


def test_target_shards_hold_every_tensor_the_index_names(hub_root):
    directory = _main_dir(hub_root, fixtures.TARGET)
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    seen: dict[str, str] = {}
    total = 0
    for shard in sorted(set(index["weight_map"].values())):
        with safe_open(str(directory / shard), framework="numpy") as handle:
            for name in handle.keys():  # noqa: SIM118 - safe_open is not a mapping
                seen[name] = shard
                total += handle.get_tensor(name).nbytes
    assert seen == index["weight_map"]
    assert total == index["metadata"]["total_size"]
    assert "model.layers.7.mlp.experts.0.up_proj.weight" in seen


def test_sparse_target_is_550_gb_by_size_and_tiny_on_disk(hub_root):
    directory = _main_dir(hub_root, fixtures.TARGET_SPARSE)
    shards = sorted(directory.glob("*.safetensors"))
    apparent = sum(s.stat().st_size for s in shards)
    on_disk = sum(s.stat().st_blocks * 512 for s in shards)
    assert apparent == 550 * 1000**3
    assert on_disk < 10 * 1024**2
    with safe_open(str(shards[-1]), framework="numpy") as handle:
        assert list(handle.keys()) == ["padding"]


@pytest.mark.parametrize(("repo", "block_size", "layers"), [(fixtures.DRAFTER_B8, 8, 6), (fixtures.DRAFTER_B16, 16, 4)])
def test_dflash_drafters_carry_sglang_fields(hub_root, repo, block_size, layers):
    config = json.loads((_main_dir(hub_root, repo) / "config.json").read_text())
    assert config["architectures"] == ["DFlashDraftModel"]
    assert config["num_hidden_layers"] == layers
    dflash = config["dflash_config"]
    assert dflash["block_size"] == block_size
    assert dflash["mask_token_id"] == fixtures.MASK_TOKEN_ID
    assert all(0 <= i < fixtures.TARGET_LAYERS for i in dflash["target_layer_ids"])


def test_broken_drafters_are_broken_in_exactly_one_way(hub_root):
    def dflash(repo: str) -> dict:
        return json.loads((_main_dir(hub_root, repo) / "config.json").read_text())["dflash_config"]

    assert isinstance(dflash(fixtures.BROKEN_MASK_STRING)["mask_token_id"], str)
    assert max(dflash(fixtures.BROKEN_LAYER_IDS)["target_layer_ids"]) >= fixtures.TARGET_LAYERS
    assert "block_size" not in dflash(fixtures.BROKEN_NO_BLOCK_SIZE)
    assert dflash(fixtures.BROKEN_NO_BLOCK_SIZE)["mask_token_id"] == fixtures.MASK_TOKEN_ID


def test_gated_target_is_marked_gated(hub_root):
    root, summary = hub_root
    assert json.loads((root / fixtures.TARGET_GATED / "repo.json").read_text())["gated"] is True
    assert summary[fixtures.TARGET]["gated"] is False


def test_cli_rejects_a_non_positive_sparse_size(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        fixtures.main(["--out", str(tmp_path), "--sparse-target-gb", "0"])
    assert exit_info.value.code == 2
    assert "--sparse-target-gb must be > 0" in capsys.readouterr().err
