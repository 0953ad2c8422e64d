"""SGLang 0.5.23's command line, for the flags specgate renders.

sglang 0.5.23: srt/server_args.py::prepare_server_args builds ``argparse.ArgumentParser(prog="sglang
serve")`` (allow_abbrev left on), merges ``--config <yaml>`` first (srt/utils/
server_args_config_parser.py::ConfigArgumentMerger: config args, then the CLI's, so the CLI wins)
and parses; an unknown flag is argparse's error, exit status 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

# sglang 0.5.23: srt/arg_groups/choices.py::ATTENTION_BACKEND_CHOICES (the entries a CUDA host can name)
ATTENTION_BACKENDS = (
    "triton", "torch_native", "flex_attention", "dsa", "nsa", "fa3", "fa4", "flashinfer", "flashmla",
    "trtllm_mla", "cutedsl_mla", "trtllm_mha", "aiter", "wave", "intel_amx", "ascend", "intel_xpu",
)  # fmt: skip
# sglang 0.5.23: srt/arg_groups/fields/exec_.py::moe_a2a_backend
MOE_A2A_BACKENDS = ("none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer")
# sglang 0.5.23: srt/model_executor/cuda_graph_config.py::Backend (user-facing names)
CUDA_GRAPH_BACKENDS = ("full", "breakable", "disabled")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def human_readable_int(value: str) -> int:
    """sglang 0.5.23: srt/utils/common.py::human_readable_int ('128k' -> 128000, '1Ki' -> 1024)."""
    import re
    from decimal import Decimal

    value = value.strip()
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if match:
        number, suffix = match.groups()
        iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
        if suffix in iec:
            if "." in number:
                raise argparse.ArgumentTypeError(f"Decimals are not allowed with IEC suffixes like '{suffix}'.")
            return int(number) * iec[suffix]
        return int(Decimal(number) * {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}[suffix])
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"Invalid integer value: {value!r}") from None


# (flags, kwargs) in SGLang's spelling; dest is the first long flag, dashes to underscores.
_OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--model-path", "--model"), {"type": str}),
    (("--tokenizer-path",), {"type": str}),  # srt/arg_groups/fields/serving.py::tokenizer_path
    (("--served-model-name",), {"type": str}),
    (("--revision",), {"type": str}),
    (("--trust-remote-code",), {"action": "store_true"}),
    (("--context-length",), {"type": human_readable_int}),
    (("--host",), {"type": str, "default": "127.0.0.1"}),
    (("--port",), {"type": int, "default": 30000}),
    (("--api-key",), {"type": str}),
    (("--admin-api-key",), {"type": str}),
    (("--enable-metrics",), {"action": "store_true"}),
    (("--log-level",), {"type": str, "default": "info"}),
    # srt/arg_groups/fields/observability.py::decode_log_interval: how often (in decode batches) the scheduler
    # logs and folds its speculative counters into /server_info's avg_spec_accept_length
    (("--decode-log-interval",), {"type": int, "default": 40}),
    (("--device",), {"type": str}),
    (("--random-seed",), {"type": int}),
    (("--tp-size", "--tensor-parallel-size"), {"type": int, "default": 1}),
    (("--ep-size", "--expert-parallel-size", "--ep"), {"type": int, "default": 1}),
    (("--pp-size", "--pipeline-parallel-size"), {"type": int, "default": 1}),
    (("--dp-size", "--data-parallel-size"), {"type": int, "default": 1}),
    (("--attn-dp-size", "--attention-data-parallel-size"), {"type": int, "default": 1}),
    (("--enable-dp-lm-head",), {"action": "store_true"}),
    (("--moe-a2a-backend",), {"type": str, "choices": MOE_A2A_BACKENDS, "default": "none"}),
    (("--attention-backend",), {"type": str, "choices": ATTENTION_BACKENDS}),
    (("--nnodes",), {"type": int, "default": 1}),
    (("--node-rank",), {"type": int, "default": 0}),
    (("--dist-init-addr", "--nccl-init-addr"), {"type": str}),
    # srt/arg_groups/fields/parallel.py: seconds for torch.distributed's initialization (None: PyTorch's default),
    # and the gated launch's control port (srt/distributed/gated_launch.py)
    (("--dist-timeout",), {"type": int}),
    (("--gated-launch-port",), {"type": int}),
    (("--mem-fraction-static",), {"type": float}),
    (("--max-running-requests",), {"type": int}),
    (("--chunked-prefill-size",), {"type": int}),
    (("--kv-cache-dtype",), {"type": str, "default": "auto"}),
    (("--sampling-backend",), {"type": str}),
    (("--tool-call-parser",), {"type": str}),
    (("--reasoning-parser",), {"type": str}),
    (("--cuda-graph-max-bs-decode",), {"type": int}),
    (("--cuda-graph-max-bs-prefill",), {"type": int}),
    (("--cuda-graph-backend-decode",), {"type": str, "choices": CUDA_GRAPH_BACKENDS}),
    (("--cuda-graph-backend-prefill",), {"type": str, "choices": CUDA_GRAPH_BACKENDS}),
    (("--disable-cuda-graph",), {"action": "store_true"}),
    (("--speculative-algorithm",), {"type": str}),
    (("--speculative-draft-model-path", "--speculative-draft-model"), {"type": str}),
    (("--speculative-draft-model-revision",), {"type": str}),
    (("--speculative-num-steps",), {"type": int}),
    (("--speculative-eagle-topk",), {"type": int}),
    (("--speculative-num-draft-tokens",), {"type": int}),
    (("--speculative-dflash-block-size",), {"type": int}),
    (("--speculative-draft-window-size",), {"type": int}),
    (("--speculative-draft-attention-backend",), {"type": str}),
    # PR sgl-project/sglang#29907 (DDTree); not in any release
    (("--speculative-ddtree-budget",), {"type": int}),
)


def build_parser(reject_flag: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``reject_flag`` leaves one flag out, as an SGLang version without it would."""
    parser = argparse.ArgumentParser(prog="sglang serve")
    for flags, kwargs in _OPTIONS:
        kept = tuple(f for f in flags if f != reject_flag)
        if not kept:
            continue
        dest = flags[0][2:].replace("-", "_")
        parser.add_argument(*kept, dest=dest, **kwargs)
    parser.add_argument(
        "--config",
        type=str,
        help="Read CLI options from a config file. Must be a YAML file with configuration options.",
    )
    return parser


def merge_config(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """sglang 0.5.23: srt/utils/server_args_config_parser.py::ConfigArgumentMerger.merge_config_with_args."""
    indices = [i for i, arg in enumerate(argv) if arg == "--config"]
    if not indices:
        return argv
    if len(indices) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    index = indices[0]
    if index == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    path = Path(argv[index + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {path.suffix}")
    if not path.exists():
        raise ValueError(f"Config file not found: {path}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError("Config file must contain a dictionary at root level")
    store_true = {
        opt[2:].replace("-", "_")
        for action in parser._actions
        if isinstance(action, argparse._StoreTrueAction)
        for opt in action.option_strings
    }
    config_args: list[str] = []
    for key, value in data.items():
        if isinstance(value, bool):
            if key.replace("-", "_") in store_true:
                if value:
                    config_args.append(f"--{key}")
            else:
                config_args.extend([f"--{key}", str(value).lower()])
        elif isinstance(value, list):
            if value:
                config_args.append(f"--{key}")
                config_args.extend(str(item) for item in value)
        else:
            config_args.extend([f"--{key}", str(value)])
    return config_args + argv[:index] + argv[index + 2 :]


def parse(argv: list[str], reject_flag: str | None = None) -> tuple[argparse.Namespace, list[str]]:
    """Parse like ``sglang serve``; returns the namespace and the merged argv (the launch command)."""
    parser = build_parser(reject_flag)
    try:
        merged = merge_config(argv, parser)
    except ValueError as exc:
        parser.exit(1, f"{exc}\n")
    return parser.parse_args(merged), merged
