"""Cases for asking a resolver (SGLang's own, or the sim's) about rendered and known-bad `--config` files.

Every case is resolved by module_utils/specgate/service/resolver_driver.py, the script sglang_config_check ships to
hosts. For SGLang, one driver process per version resolves all cases (importing SGLang costs seconds); the
versions run concurrently. The resolver venv is made by scripts/setup_sglang_resolver_venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from ansible.module_utils.specgate.common.engine import SUPPORTED_VERSIONS, VERSION_RULES
from ansible.module_utils.specgate.service import resolver_driver
from ansible.module_utils.specgate.service.node_topology import NodeSettings, group_flags, rank_flags, topology
from ansible.module_utils.specgate.service.sglang_flags import server_config
from specgate_sim.fixtures import HIDDEN, TARGET_LAYERS, VOCAB_SIZE, dflash_config, target_config

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DRIVER = PROJECT_ROOT / "module_utils" / "specgate" / "service" / "resolver_driver.py"
PROFILES = sorted((PROJECT_ROOT / "configs" / "profiles").glob("*.yml"))
PRESETS = sorted((PROJECT_ROOT / "configs" / "presets").glob("*.yml"))
DRAFTER_BLOCK_SIZE = 8
# SGLang on a machine without a GPU: without a device resolution stops at "No accelerator", and DFLASH is
# refused on --device cpu. Only tests append this; hosts resolve with the devices they have.
CPU_PEER_ARGV = ["--device", "cuda"]
# The DDTree PR's own flag: no SGLang release has it (sgl-project/sglang#29907 is open).
DDTREE_ONLY_KEYS = ("speculative-ddtree-budget",)


@dataclass
class Case:
    """One config to resolve. `config` may hold {target}/{drafter} and the version-spelled markers
    __window__ / __attn_dp__ / __max_bs__ (expanded from common/engine.py VERSION_RULES)."""

    id: str
    config: dict[str, Any]
    versions: tuple[str, ...] = SUPPORTED_VERSIONS
    expect_error: str | dict[str, str] | None = None  # substring of the resolver's message (or per version)
    expect_stage: str | None = None  # where SGLang must refuse it (resolver_driver: "launcher:<check>", ...)
    sim: bool = True  # whether the sim (modelled on 0.5.23 with the DDTree PR) must agree
    extra_argv: list[str] = field(default_factory=list)
    check: Callable[[dict[str, Any], str], None] | None = None  # asserts on the resolved fields
    stock_adapt: bool = False  # a shipped rendering: resolve what stock, GPU-less SGLang can (adapt_for_stock_sglang)


def _dflash(**extra: Any) -> dict[str, Any]:
    return {
        "model-path": "{target}",
        "speculative-algorithm": "DFLASH",
        "speculative-draft-model-path": "{drafter}",
        **extra,
    }


KNOWN_BAD = (
    Case("dflash_with_pipeline_parallel", _dflash(**{"pp-size": 2}),
         expect_error="DFLASH speculative decoding only supports pp_size == 1"),
    Case("block_size_differs_from_draft_tokens",
         _dflash(**{"speculative-dflash-block-size": 8, "speculative-num-draft-tokens": 16}),
         expect_error="For DFLASH they must match"),
    Case("block_size_zero", _dflash(**{"speculative-dflash-block-size": 0}),
         expect_error="DFLASH requires --speculative-dflash-block-size to be positive, got 0"),
    Case("dflash_without_drafter_path", {"model-path": "{target}", "speculative-algorithm": "DFLASH"},
         expect_error="DFLASH speculative decoding requires setting --speculative-draft-model-path"),
    Case("attention_dp_without_dp_lm_head", _dflash(**{"tp-size": 8, "__attn_dp__": 8}), versions=("0.5.23",),
         expect_error="DFLASH with dp attention requires --enable-dp-lm-head"),
    Case("dflash_with_attention_dp_before_0_5_23", _dflash(**{"tp-size": 8, "__attn_dp__": 8}),
         versions=("0.5.11", "0.5.15", "0.5.19"), sim=False,
         expect_error="Currently DFLASH speculative decoding does not support dp attention"),
    Case("draft_window_smaller_than_block",
         _dflash(**{"speculative-dflash-block-size": 8, "__window__": 4}),
         expect_error="must be >= --speculative-num-draft-tokens (block_size)"),
    Case("trtllm_mla_off_blackwell", {"model-path": "{target}", "attention-backend": "trtllm_mla"},
         expect_error="TRTLLM MLA backend is only supported on Blackwell GPUs"),
    # The sim is the DDTree-patched 0.5.23, so it knows DDTREE; stock SGLang must not.
    Case("ddtree_on_stock_sglang", _dflash(**{"speculative-algorithm": "DDTREE"}), sim=False,
         expect_error={"0.5.11": "argument --speculative-algorithm: invalid choice: 'DDTREE'",
                       "0.5.15": "Unknown speculative algorithm name: DDTREE",
                       "0.5.19": "Unknown speculative algorithm name: DDTREE",
                       "0.5.23": "Unknown speculative algorithm name: DDTREE"}),
    # srt/configs/model_config.py::ModelConfig._derive_context_length, which parsing (0.5.11, 0.5.15) or resolution
    # (0.5.19, 0.5.23) already runs; the fixture target holds 4096.
    Case("context_longer_than_the_model", {"model-path": "{target}", "context-length": 8192},
         expect_error="User-specified context_length (8192) is greater than the derived context_length (4096)"),
    Case("abbreviated_key", {"model-path": "{target}", "speculative-algo": "DFLASH"},
         expect_error="are not option strings"),
)


# What the launcher runs after resolution and before loading weights, in its order, for a DFLASH config with
# no "auto" parser (resolver_driver.launcher_checks): every supported version must run every one of them, so a
# check a version renamed or moved fails here instead of silently not running on hosts.
LAUNCHER_CHECKS_DFLASH = ("load_plugins", "check_server_args", "model_config", "draft_model_config",
                          "dflash_draft_config")


def eagle3_config(max_position_embeddings: int) -> dict[str, Any]:
    """An EAGLE-3 drafter's config as SpecForge writes one (LlamaForCausalLMEagle3): one layer, the target's vocab."""
    return {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "torch_dtype": "float16",
            "hidden_size": HIDDEN, "intermediate_size": 2 * HIDDEN, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 1, "vocab_size": VOCAB_SIZE,
            "draft_vocab_size": VOCAB_SIZE, "max_position_embeddings": max_position_embeddings,
            "rms_norm_eps": 1e-6}  # fmt: skip


# Drafter fixtures beside the good one (write_model_dirs): a target layer id past the target's last layer; an
# EAGLE-3 drafter trained for 2048 positions, shorter than the target's 4096.
BAD_DRAFTERS = {"drafter_layer_out_of_range": dflash_config(DRAFTER_BLOCK_SIZE, 2, [1, TARGET_LAYERS + 3]),
                "eagle3_short_context": eagle3_config(2048)}


def launcher_refuses_cases(version: str) -> list[Case]:
    """Configs specgate's renderer emits that SGLang's resolution accepts and its launcher refuses before loading
    weights (each with the launcher check that refuses it): the pre-check must refuse them too."""
    base = {"model_path": "{target}", "drafter_path": "{drafter}", "algorithm": "DFLASH", "block_size": 8}

    def case(name: str, deployment: dict[str, Any], error: str, stage: str = "launcher:check_server_args",
             sim: bool = False) -> Case:  # fmt: skip
        return Case(f"{name}@{version}", server_config({**base, **deployment}, version), versions=(version,),
                    expect_error=error, expect_stage=stage, sim=sim)

    cases = [
        # sglang 0.5.23 srt/arg_groups/validation_hook.py::check_server_args (0.5.11-0.5.15: srt/server_args.py).
        # The sim refuses it too: a demo user can set it.
        case("served_model_name_with_colon", {"served_model_name": "kimi-k2.6:fp8"},
             "served_model_name cannot contain a colon (':') character", sim=True),
        case("chunked_prefill_not_a_multiple_of_page_size",
             {"chunked_prefill_size": 8100, "extra_args": {"page-size": 64}},
             "chunked_prefill_size must be divisible by page_size"),
        case("tokenizer_worker_num_zero", {"extra_args": {"tokenizer-worker-num": 0}},
             "Tokenizer worker num must >= 1"),
        # sglang 0.5.23 srt/speculative/dflash_utils.py::DFlashDraftConfig.resolve_target_layer_ids, run by the
        # target's model runner before loading weights; resolution never looks (the block size is given).
        case("dflash_draft_layer_out_of_range", {"drafter_path": "{drafter_layer_out_of_range}"},
             "DFLASH target_layer_ids contains an out-of-range layer id", "launcher:dflash_draft_config"),
    ]
    if version == "0.5.23":
        # sglang 0.5.23 spec_aux_hidden_state.py::_resolve_eagle_aux_hidden_state builds the drafter's model config
        # with the served context (srt/configs/model_config.py::_derive_context_length): a drafter trained for
        # fewer positions is refused when the model runner starts, after the old server stopped.
        eagle3 = {"algorithm": "EAGLE3", "block_size": None, "drafter_path": "{eagle3_short_context}",
                  "context_length": 4096, "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4}
        cases.append(case("eagle3_drafter_shorter_than_the_context", eagle3,
                          "Target model's context_length (4096) is greater than the derived context_length (2048)",
                          "launcher:draft_model_config", sim=True))
    if version == "0.5.11":
        # sglang 0.5.11 srt/server_args.py::check_server_args (gone from check_server_args in 0.5.15)
        cases.append(case("two_batch_overlap_without_a2a_backend", {"extra_args": {"enable-two-batch-overlap": True}},
                          "When enabling two batch overlap, moe_a2a_backend cannot be 'none'."))
    else:
        # sglang 0.5.15 srt/server_args.py::check_server_args (not in 0.5.11)
        cases.append(case("cuda_graph_padding_off_with_torch_compile",
                          {"extra_args": {"disable-cuda-graph-padding": True, "enable-torch-compile": True}},
                          "--disable-cuda-graph-padding is incompatible with --enable-torch-compile"))
    return cases


# A two-node H100 pair (sglang_service_nodes_group) serving one DFLASH deployment over 16 GPUs.
PAIR_NODES = ("h100-a", "h100-b")
PAIR_ADDRESSES = {"h100-a": "10.0.0.1", "h100-b": "10.0.0.2"}
PAIR_DEPLOYMENT = {"model_path": "{target}", "drafter_path": "{drafter}", "algorithm": "DFLASH", "block_size": 8,
                   "tp_size": 16}


def multinode_cases(version: str) -> list[Case]:
    """Each node's rendering as the role runs it: the release's --config (the deployment plus the flags every node
    shares) and the node's own --node-rank on the unit's command line. SGLang must resolve both nodes to one world:
    nnodes 2, its own rank, rank 0's rendezvous, the timeout, and the gated launch where the version has it."""
    topo = topology(NodeSettings(nodes_group="kimi_h100_pair"), PAIR_NODES, {}, PAIR_ADDRESSES)
    shared = group_flags(topo, version)
    config = {**server_config(PAIR_DEPLOYMENT, version), **shared}
    cases = []
    for host in PAIR_NODES:
        rank = rank_flags(topo, host)["node-rank"]
        expected: dict[str, Any] = {"nnodes": 2, "node_rank": rank, "dist_init_addr": "10.0.0.1:25000",
                                    "dist_timeout": 3600, "tp_size": 16}
        if VERSION_RULES[version].gated_launch:
            expected["gated_launch_port"] = shared["gated-launch-port"]
        cases.append(Case(f"two_node_h100_pair_rank{rank}@{version}", config, versions=(version,),
                          extra_argv=["--node-rank", str(rank)], check=_expect_fields(**expected)))
    # SGLang's own launcher check: tp_size x pp_size must split evenly over the nodes (service_fit refuses it first)
    uneven = {**server_config({**PAIR_DEPLOYMENT, "tp_size": 3}, version), **shared}
    cases.append(Case(f"two_nodes_tp3@{version}", uneven, versions=(version,), extra_argv=["--node-rank", "0"],
                      expect_error="tp_size must be divisible by number of nodes",
                      expect_stage="launcher:check_server_args", sim=False))
    return cases


def expected_error(case: Case, version: str) -> str:
    expect = case.expect_error
    assert expect is not None, f"{case.id} expects no error"
    return expect[version] if isinstance(expect, dict) else expect


def _expect_fields(**expected: Any) -> Callable[[dict[str, Any], str], None]:
    """A check: each field (any of '|'-separated spellings the versions use) resolved to the value."""

    def check(resolved: dict[str, Any], version: str) -> None:
        for spellings, value in expected.items():
            names = [name for name in spellings.split("|") if name in resolved]
            assert names, f"SGLang {version} resolved none of {spellings}"
            assert resolved[names[0]] == value, f"SGLang {version}: {names[0]}={resolved[names[0]]!r}, want {value!r}"

    return check


def deployment_from_files(*paths: Path) -> dict[str, Any]:
    """A deployment as the role builds it: the files' sglang_service_* values, prefix dropped."""
    deployment: dict[str, Any] = {
        "model_path": "{target}",
        "drafter_path": "{drafter}",
        "served_model_name": "kimi-k2.6",
        "host": "127.0.0.1",
        "port": 30000,
        "enable_metrics": True,
    }
    for path in paths:
        for name, value in yaml.safe_load(path.read_text()).items():
            if name == "model_weights_drafter":
                continue  # a profile's drafter is the weights stage's choice; the drafter path stands in for it
            assert name.startswith("sglang_service_"), f"{path.name}: {name} is not an sglang_service_* variable"
            deployment[name.removeprefix("sglang_service_")] = value
    return deployment


def shipped_cases(version: str) -> list[Case]:
    """Every shipped profile x preset, rendered for `version` as the role renders it."""
    cases = []
    for profile in PROFILES:
        for preset in PRESETS:
            deployment = deployment_from_files(profile, preset)
            ddtree = deployment["algorithm"] == "DDTREE"
            config = server_config(deployment, f"{version}+ddtree" if ddtree else version)
            block = deployment.get("block_size")
            expected: dict[str, Any] = {"tp_size": deployment["tp_size"]}
            if block is not None:
                expected["speculative_dflash_block_size|speculative_num_draft_tokens"] = block
            cases.append(Case(f"{profile.stem}+{preset.stem}", config, versions=(version,),
                              check=_expect_fields(**expected), stock_adapt=True))
    return cases


def feature_cases(version: str) -> list[Case]:
    """Per-version spellings whose effect must show in what SGLang resolved."""
    base = {"model_path": "{target}", "drafter_path": "{drafter}"}
    window = server_config({**base, "algorithm": "DFLASH", "block_size": 8, "draft_window": 2048}, version)
    max_bs = server_config({**base, "cuda_graph_max_bs": 16}, version)
    graphs_off = server_config({**base, "cuda_graph": False}, version)
    attn_dp = server_config({**base, "tp_size": 8, "attn_dp_size": 8, "enable_dp_lm_head": True}, version)
    # SGLang's short form, read by specgate into the integer every version takes (the fixture target holds 4096).
    short_context = server_config({**base, "context_length": "3.5k"}, version)
    short_cases = [
        Case(f"context_length_short_form@{version}", short_context, versions=(version,),
             check=_expect_fields(context_length=3500)),
    ]
    if version == "0.5.23":
        # Asked of SGLang itself: its own parser reads the unrendered short form to the same number.
        short_cases.append(Case("context_length_sglang_reads_short_form@0.5.23",
                                {"model-path": "{target}", "context-length": "3.5k"}, versions=(version,),
                                sim=False, check=_expect_fields(context_length=3500)))
    # The renderer's DFLASH draft backends for this version are the ones SGLang keeps (resolution replaces any
    # other with flashinfer, warning only). 0.5.11 judges them in the draft worker, at load, not in resolution.
    draft_backend_cases = []
    if version != "0.5.11":
        dflash = {**base, "algorithm": "DFLASH", "block_size": 8}
        for backend in VERSION_RULES[version].dflash_draft_backends:
            # trtllm_mha stays only for a drafter whose layers are all sliding-window or that is causal; the
            # fixture drafter is neither, so SGLang runs flashinfer for it.
            kept = "flashinfer" if backend == "trtllm_mha" else backend
            draft_backend_cases.append(Case(
                f"dflash_draft_backend_{backend}@{version}",
                server_config({**dflash, "draft_attention_backend": backend}, version), versions=(version,),
                sim=False, check=_expect_fields(speculative_draft_attention_backend=kept)))
        # The control: a backend outside the list is replaced, so the cases above can tell kept from replaced.
        draft_backend_cases.append(Case(
            f"dflash_draft_backend_outside_the_list_is_replaced@{version}",
            {**server_config(dflash, version), "speculative-draft-attention-backend": "flashmla"},
            versions=(version,), sim=False, check=_expect_fields(speculative_draft_attention_backend="flashinfer")))
    return [
        *short_cases,
        *draft_backend_cases,
        Case(f"draft_window@{version}", window, versions=(version,), check=_expect_fields(
            **{"speculative_draft_window_size|speculative_dflash_draft_window_size": 2048})),
        Case(f"cuda_graph_max_bs@{version}", max_bs, versions=(version,), check=_expect_fields(
            **{"cuda_graph_max_bs_decode|cuda_graph_max_bs": 16})),
        Case(f"cuda_graph_off@{version}", graphs_off, versions=(version,), check=_graphs_off),
        # The control: without the switch both phases capture, so the check above can tell on from off.
        Case(f"cuda_graph_default@{version}", server_config(base, version), versions=(version,), check=_graphs_on),
        Case(f"attention_dp@{version}", attn_dp, versions=(version,), check=_attention_dp),
    ]


def graph_backends(resolved: dict[str, Any]) -> tuple[Any, Any]:
    """(decode, prefill) CUDA-graph backends as SGLang resolved them; "disabled" when a phase captures none.
    0.5.15+ resolve one cuda_graph_config with a backend per phase (0.5.19: srt/arg_groups/cuda_graph_hook.py);
    0.5.11 has two switches: disable_cuda_graph (decode) and disable_piecewise_cuda_graph (prefill, read alone by
    srt/model_executor/model_runner.py::init_piecewise_cuda_graphs)."""
    config = resolved.get("cuda_graph_config")
    if isinstance(config, dict) and "decode" in config and "prefill" in config:
        return config["decode"]["backend"], config["prefill"]["backend"]
    decode = "disabled" if resolved["disable_cuda_graph"] else "full"
    prefill = "disabled" if resolved["disable_piecewise_cuda_graph"] else "piecewise"
    return decode, prefill


def _graphs_off(resolved: dict[str, Any], version: str) -> None:
    assert graph_backends(resolved) == ("disabled", "disabled"), (
        f"SGLang {version} still captures CUDA graphs with sglang_service_cuda_graph false: "
        f"(decode, prefill) = {graph_backends(resolved)}"
    )


# Versions whose defaults capture prefill graphs for the fixture target (0.5.11 piecewise, 0.5.15/0.5.19
# tc_piecewise); 0.5.23 resolves the prefill phase "disabled" for it by itself, so there only decode tells on
# from off.
PREFILL_GRAPHS_BY_DEFAULT = ("0.5.11", "0.5.15", "0.5.19")


def _graphs_on(resolved: dict[str, Any], version: str) -> None:
    decode, prefill = graph_backends(resolved)
    assert decode != "disabled", f"SGLang {version} resolved no decode CUDA graph by default"
    if version in PREFILL_GRAPHS_BY_DEFAULT:
        assert prefill != "disabled", f"SGLang {version} resolved no prefill CUDA graph by default"


def _attention_dp(resolved: dict[str, Any], version: str) -> None:
    width = resolved.get("attn_dp_size") or (resolved.get("dp_size") if resolved.get("enable_dp_attention") else 1)
    assert width == 8, f"SGLang {version} resolved no attention-DP width of 8"


def expand(value: Any, version: str, dirs: dict[str, str]) -> Any:
    """Placeholders → this run's fixture dirs and the version's spelling."""
    if isinstance(value, str):
        return value.format(**dirs) if "{" in value else value
    if isinstance(value, dict):
        rules = VERSION_RULES[version]
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key == "__window__":
                out[rules.window] = item
            elif key == "__attn_dp__":
                out.update({"attn-dp-size": item} if rules.attn_dp == "attn-dp-size"
                           else {"dp-size": item, "enable-dp-attention": True})
            else:
                out[key] = expand(item, version, dirs)
        return out
    return value


def adapt_for_stock_sglang(config: dict[str, Any], extra_argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """What a stock, GPU-less SGLang can resolve of a rendered config, and why each change is needed:
    DDTREE exists only with the DDTree PR (resolved as the DFLASH it builds on, without the PR's own flag);
    trtllm_mla is refused off Blackwell (asserted separately by the known-bad case), so Triton stands in."""
    adapted = {k: v for k, v in config.items() if k not in DDTREE_ONLY_KEYS}
    if adapted.get("speculative-algorithm") == "DDTREE":
        adapted["speculative-algorithm"] = "DFLASH"
    argv = list(extra_argv)
    if adapted.get("attention-backend") == "trtllm_mla":
        argv += ["--attention-backend", "triton"]
    return adapted, argv


def write_model_dirs(root: Path) -> dict[str, str]:
    """A DeepSeek-V3-shaped target and a DFlash drafter (block size 8): config.json only, no weights."""
    dirs = {}
    for name, config in (
        ("target", target_config()),
        ("drafter", dflash_config(DRAFTER_BLOCK_SIZE, 2, [1, 2])),
        *BAD_DRAFTERS.items(),
    ):
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
        dirs[name] = str(root / name)
    return dirs


def write_case_files(cases: list[Case], version: str, dirs: dict[str, str], out: Path,
                     stock: bool) -> list[dict[str, Any]]:
    """Each case's config as a YAML file; `stock`: for stock SGLang, so shipped renderings are adapted."""
    requests = []
    for index, case in enumerate(cases):
        config = expand(case.config, version, dirs)
        extra = list(case.extra_argv)
        if stock and case.stock_adapt:
            config, extra = adapt_for_stock_sglang(config, extra)
        path = out / f"case{index}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        requests.append({"id": case.id, "config": str(path), "extra_argv": extra, "env": {}})
    return requests


def resolver_venv() -> Path:
    return Path(os.environ.get("SPECGATE_SGLANG_VENV", PROJECT_ROOT / ".venv-sglang"))


# How long a peer test waits for the resolver venv that scripts/test sets up beside pytest: a fresh machine took 381 s.
SETUP_WAIT_S = 1800


def setup_running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_for_resolver_setup(timeout_s: float = SETUP_WAIT_S) -> None:
    """Wait while scripts/test's background setup of the venv runs (it names it in SPECGATE_RESOLVER_SETUP_PID)."""
    import pytest

    pid = os.environ.get("SPECGATE_RESOLVER_SETUP_PID")
    if not pid:
        return
    deadline = time.monotonic() + timeout_s
    while setup_running(int(pid)):
        if time.monotonic() > deadline:
            pytest.fail(f"the SGLang resolver venv's setup (process {pid}) still runs after {timeout_s:.0f} s")
        time.sleep(1)


def require_resolver_venv() -> Path:
    """The venv, or a skip saying how to make it; in CI (CI set) its absence fails: no silent skips there. While
    scripts/test sets it up in the background, it waits for that first."""
    import pytest

    wait_for_resolver_setup()
    venv = resolver_venv()
    if not (venv / "bin" / "python").exists():
        reason = f"no SGLang resolver venv at {venv}: run scripts/setup_sglang_resolver_venv"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return venv


def resolver_env(version: str) -> dict[str, str]:
    """The environment of a run under the resolver venv's SGLang `version`: that version on the path, and Python
    writing bytecode. The venv is installed without compiling (scripts/setup_sglang_resolver_venv: compiling all of
    its 2.8 GB took ~300 s of CPU, most of it for modules never imported), so the first run caches what it imports and
    later runs read that; where PYTHONDONTWRITEBYTECODE is set (these machines set it), every run would compile all it
    imports again."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = _version_path(version)
    return env


def use_resolver_env(monkeypatch: Any, version: str) -> None:
    """resolver_env in this process's own environment, for code that starts the venv's Python itself."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPATH", _version_path(version))


def _version_path(version: str) -> str:
    return str(resolver_venv() / "versions" / version)


def launch_driver(version: str, requests: list[dict[str, Any]], work: Path) -> subprocess.Popen:
    venv = resolver_venv()
    request_file, result_file = work / "request.json", work / "result.json"
    request_file.write_text(json.dumps({"server_args_module": "sglang.srt.server_args",
                                        "want_option_strings": True,
                                        "cases": [{**r, "extra_argv": [*r["extra_argv"], *CPU_PEER_ARGV]}
                                                  for r in requests]}))
    return subprocess.Popen(
        [str(venv / "bin" / "python"), str(DRIVER), str(request_file), str(result_file)],
        env=resolver_env(version), stdout=subprocess.DEVNULL, stderr=(work / "stderr.log").open("w"),
    )


def resolve_in_process(module_name: str, requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The driver's own code path without a process: for resolvers importable here (the sim)."""
    module = __import__(module_name, fromlist=["prepare_server_args"])
    options = resolver_driver.option_strings(module)
    return {r["id"]: resolver_driver.resolve_case(module, options, r) for r in requests}
