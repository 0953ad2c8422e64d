"""The cross-check with SGLang's own benchmark: its command, its result file, and what happens without SGLang."""

from __future__ import annotations

import json
import sys

import pytest
from ansible.module_utils.specgate.gate.bench_client import BenchError
from ansible.module_utils.specgate.gate.sglang_crosscheck import build_command, parse_result, run_crosscheck

pytestmark = pytest.mark.host

CELL = {"port": 30000, "context_tokens": 512, "concurrency": 16, "num_prompts": 32, "output_tokens": 256, "seed": 7}


def test_command_runs_the_same_cell_without_downloading_a_dataset():
    cmd = build_command(python="/opt/specgate/venv/bin/python", output_file="/tmp/x.jsonl", **CELL)
    assert cmd[:3] == ["/opt/specgate/venv/bin/python", "-m", "sglang.benchmark.serving"]
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=False))
    assert flags["--dataset-name"] == "random-ids"
    assert flags["--host"] == "127.0.0.1"
    assert (flags["--random-input-len"], flags["--random-output-len"]) == ("512", "256")
    assert (flags["--max-concurrency"], flags["--num-prompts"]) == ("16", "32")
    assert flags["--random-range-ratio"] == "1.0"
    assert "--flush-cache" in cmd


def test_result_keeps_the_last_line_and_the_comparable_fields():
    first = {"output_throughput": 1.0}
    last = {"output_throughput": 812.5, "median_ttft_ms": 41.0, "accept_length": 4.2, "input_lens": [1, 2]}
    parsed = parse_result(json.dumps(first) + "\n" + json.dumps(last) + "\n")
    assert parsed["output_throughput"] == 812.5
    assert parsed["accept_length"] == 4.2
    assert "input_lens" not in parsed


def test_empty_result_file_is_an_error():
    with pytest.raises(BenchError, match="no result line"):
        parse_result("\n")


def test_a_venv_without_sglang_gets_a_message_naming_the_option():
    with pytest.raises(BenchError, match="spec_gate_bench_crosscheck needs SGLang's benchmark"):
        run_crosscheck(python=sys.executable, api_key="k", timeout_s=60, **CELL)


def test_a_missing_python_is_named():
    with pytest.raises(BenchError, match="does not exist"):
        run_crosscheck(python="/nonexistent/bin/python", api_key=None, timeout_s=60, **CELL)
