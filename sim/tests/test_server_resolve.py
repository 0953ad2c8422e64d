"""Flags, --config and resolution behave as SGLang 0.5.23's for what specgate renders."""

from __future__ import annotations

from pathlib import Path

import pytest
from specgate_sim import args, testing
from specgate_sim.resolve import ResolveError, drafter_block_size, resolve
from specgate_sim.simenv import SimEnv, from_env


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG)


def _drafter(tmp_path: Path, config: dict[str, object]) -> Path:
    return testing.write_model_dir(tmp_path / "drafter", config)


def _resolve(argv: list[str], env: dict[str, str] | None = None, sim: SimEnv | None = None):
    ns, _ = args.parse(argv)
    return resolve(ns, sim or SimEnv(), env or {})


def test_unique_prefixes_are_accepted_like_sglang(target: Path) -> None:
    ns, _ = args.parse(["--model-path", str(target), "--speculative-algo", "DFLASH"])
    assert ns.speculative_algorithm == "DFLASH"


def test_ambiguous_prefix_is_an_argparse_error(target: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        args.parse(["--model-path", str(target), "--cuda-graph-max-bs", "8"])
    assert exc.value.code == 2
    assert "ambiguous option: --cuda-graph-max-bs" in capsys.readouterr().err


def test_context_length_takes_human_readable_ints(target: Path) -> None:
    assert _resolve(["--model-path", str(target), "--context-length", "128k"]).args["context_length"] == 128000
    assert _resolve(["--model-path", str(target), "--context-length", "2Ki"]).args["context_length"] == 2048
    assert _resolve(["--model-path", str(target)]).args["context_length"] == 262144  # from config.json


def test_a_context_longer_than_the_models_is_refused_as_sglang_refuses_it(tmp_path: Path) -> None:
    config = {**testing.TARGET_CONFIG, "max_position_embeddings": 4096}
    target = testing.write_model_dir(tmp_path / "short", config)
    assert _resolve(["--model-path", str(target), "--context-length", "4096"]).args["context_length"] == 4096
    with pytest.raises(ResolveError, match=r"User-specified context_length \(8192\) is greater than the derived "
                                           r"context_length \(4096\)"):
        _resolve(["--model-path", str(target), "--context-length", "8192"])
    allowed = _resolve(["--model-path", str(target), "--context-length", "8192"],
                       env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"})
    assert allowed.args["context_length"] == 8192


def test_the_derived_context_length_follows_sglangs_keys_and_rope_scaling() -> None:
    from specgate_sim.resolve import derived_context_length

    assert derived_context_length({"max_position_embeddings": 4096}) == 4096
    assert derived_context_length({"seq_length": 1000, "max_position_embeddings": 4096}) == 1000
    assert derived_context_length({"max_position_embeddings": 4096, "rope_scaling": {"factor": 4}}) == 16384
    scaled = {"max_position_embeddings": 4096, "rope_scaling": {"factor": 4, "original_max_position_embeddings": 1024}}
    assert derived_context_length(scaled) == 4096
    assert derived_context_length({}) == 2048


def test_config_keys_with_underscores_are_rejected(tmp_path: Path, target: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"model_path: {target}\n")
    with pytest.raises(SystemExit) as exc:
        args.parse(["--config", str(config)])
    assert exc.value.code == 2


def test_cli_flags_override_config_values(tmp_path: Path, target: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"model-path: {target}\ntp-size: 8\ntrust-remote-code: true\nenable-metrics: false\n")
    ns, merged = args.parse(["--config", str(config), "--tp-size", "4"])
    assert (ns.tp_size, ns.trust_remote_code, ns.enable_metrics) == (4, True, False)
    assert merged[:2] == ["--model-path", str(target)]


def test_dflash_takes_block_size_from_the_drafter(tmp_path: Path, target: Path) -> None:
    drafter = _drafter(tmp_path, testing.drafter_config(16))
    r = _resolve(
        ["--model-path", str(target), "--speculative-algorithm", "dflash", "--speculative-draft-model", str(drafter)]
    )
    assert (r.spec.algorithm, r.spec.block_size, r.spec.trained_block_size) == ("DFLASH", 16, 16)
    assert r.args["speculative_num_draft_tokens"] == 16
    assert (r.args["speculative_num_steps"], r.args["speculative_eagle_topk"]) == (1, 1)
    assert r.args["max_running_requests"] == 48


def test_top_level_block_size_counts_when_dflash_config_lacks_it() -> None:
    assert drafter_block_size({"block_size": 8}) == 8
    assert drafter_block_size({"block_size": 8, "dflash_config": {"block_size": 4}}) == 4
    assert drafter_block_size({"dflash_config": {}}) is None
    assert drafter_block_size({"block_size": 0}) is None


def test_requested_block_size_beyond_training_is_kept_apart(tmp_path: Path, target: Path) -> None:
    drafter = _drafter(tmp_path, testing.drafter_config(8))
    argv = ["--model-path", str(target), "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path"]
    r = _resolve([*argv, str(drafter), "--speculative-dflash-block-size", "16"])
    assert (r.spec.block_size, r.spec.trained_block_size) == (16, 8)


def test_ddtree_budget_defaults_to_block_size_minus_one(tmp_path: Path, target: Path) -> None:
    drafter = _drafter(tmp_path, testing.drafter_config(8))
    argv = ["--model-path", str(target), "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path"]
    r = _resolve([*argv, str(drafter)])
    assert (r.spec.budget, r.args["speculative_num_draft_tokens"]) == (7, 8)
    r = _resolve([*argv, str(drafter), "--speculative-ddtree-budget", "32", "--speculative-eagle-topk", "6"])
    assert (r.spec.budget, r.spec.topk, r.args["speculative_num_draft_tokens"]) == (32, 6, 33)


def test_ddtree_env_knobs_are_read(tmp_path: Path, target: Path) -> None:
    drafter = _drafter(tmp_path, testing.drafter_config(8))
    env = {"SGLANG_DDTREE_MAX_TOPK": "3", "SGLANG_DDTREE_DEPTH_BONUS": "0.5", "SGLANG_DDTREE_RANK_PROBE": "1"}
    argv = ["--model-path", str(target), "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path"]
    r = _resolve([*argv, str(drafter)], env=env)
    assert (r.spec.max_topk, r.spec.depth_bonus) == (3, 0.5)
    assert r.ddtree_env == env


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pp-size", "2"], "only supports pp_size == 1"),
        (["--speculative-num-draft-tokens", "8", "--speculative-dflash-block-size", "16"], "they must match"),
        (["--speculative-dflash-block-size", "0"], "to be positive"),
        (["--speculative-draft-window-size", "4"], "--speculative-draft-window-size must be >="),
        (["--attn-dp-size", "2"], "requires --enable-dp-lm-head"),
        (["--device", "cpu"], "is not supported by CpuPlatform"),
    ],
)
def test_dflash_rejections_carry_sglangs_messages(tmp_path: Path, target: Path, extra: list[str], message: str) -> None:
    drafter = _drafter(tmp_path, testing.drafter_config(8))
    argv = ["--model-path", str(target), "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path"]
    with pytest.raises(ResolveError, match="ValueError: ") as exc:
        _resolve([*argv, str(drafter), *extra])
    assert message in str(exc.value)


def test_dflash_without_a_drafter_is_refused(target: Path) -> None:
    with pytest.raises(ResolveError, match="requires setting --speculative-draft-model-path"):
        _resolve(["--model-path", str(target), "--speculative-algorithm", "DFLASH"])


def test_unknown_algorithm_is_refused(target: Path) -> None:
    with pytest.raises(ResolveError, match="Unknown speculative algorithm name: MAGIC"):
        _resolve(["--model-path", str(target), "--speculative-algorithm", "MAGIC"])


def test_nextn_is_reported_as_eagle(target: Path) -> None:
    r = _resolve(["--model-path", str(target), "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2"])
    assert r.args["speculative_algorithm"] == "EAGLE"
    assert (r.spec.algorithm, r.spec.num_steps, r.args["speculative_num_draft_tokens"]) == ("NEXTN", 2, 3)


def test_load_seconds_come_from_apparent_weight_bytes(tmp_path: Path) -> None:
    target = testing.write_model_dir(tmp_path / "t", testing.TARGET_CONFIG, weight_bytes=3_000_000)
    (target / "extra.bin").write_bytes(b"x" * 1_000_000)
    (target / "README.md").write_text("not weights" * 1000)
    r = _resolve(["--model-path", str(target)], sim=SimEnv(load_bandwidth=1e6))
    assert (r.weight_bytes, r.load_seconds) == (4_000_000, pytest.approx(4.0))
    fixed = _resolve(["--model-path", str(target)], sim=SimEnv(load_seconds=9.0, slow_load_seconds=1.0))
    assert fixed.load_seconds == pytest.approx(10.0)


def test_sim_knobs_come_from_the_environment_only() -> None:
    sim = from_env(
        {
            "SPECGATE_SIM_TIME_SCALE": "0.01",
            "SPECGATE_SIM_WRONG_FRACTION": "0.2",
            "SPECGATE_SIM_FAULT_NEVER_HEALTHY": "yes",
            "SPECGATE_SIM_REJECT_FLAG": "--tp-size",
            "SPECGATE_SIM_SEED": "5",
        }
    )
    assert (sim.time_scale, sim.wrong_fraction, sim.never_healthy, sim.reject_flag, sim.seed) == (
        0.01,
        0.2,
        True,
        "--tp-size",
        5,
    )
    assert from_env({}) == SimEnv()
    flags = {o for action in args.build_parser()._actions for o in action.option_strings}
    assert not any("sim" in flag or "fault" in flag for flag in flags)
