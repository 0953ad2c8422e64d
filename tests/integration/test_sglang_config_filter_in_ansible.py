"""The sglang_config filters load inside Ansible itself (controller plugins do not see module_utils on their own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = Path(sys.executable).parent / "ansible"


def run_debug(expression: str, tmp_path: Path, *extra: str) -> tuple[str, dict]:
    completed = subprocess.run(
        [str(ANSIBLE), "localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug",
         "-e", f"ansible_python_interpreter={sys.executable}", *extra, "-a", f"msg={{{{ {expression} }}}}"],
        cwd=PROJECT_ROOT, env={**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path),
             # The result as JSON to parse (ansible.cfg prints YAML for people).
             "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"},
        capture_output=True, text=True, timeout=120, check=False,
    )
    head, marker, payload = completed.stdout.partition(" => ")
    assert marker, f"no result from ansible:\n{completed.stdout}\n{completed.stderr}"
    return head.rsplit("| ", 1)[-1].strip(), json.loads(payload)


def test_ansible_renders_a_ddtree_config_through_the_filter(tmp_path):
    deployment = {"model_path": "/m", "algorithm": "DDTREE", "drafter_path": "/d", "block_size": 8,
                  "ddtree_budget": 8, "ddtree_topk": 4, "draft_window": 2048}
    status, result = run_debug(f"{deployment!r} | sglang_server_config('0.5.19+ddtree')", tmp_path)
    assert status == "SUCCESS", result
    assert result["msg"]["speculative-dflash-draft-window-size"] == 2048
    assert result["msg"]["speculative-ddtree-budget"] == 8


def test_ansible_fails_the_task_with_the_filters_message(tmp_path):
    status, result = run_debug("{'model_path': '/m', 'algorithm': 'DDTREE', 'drafter_path': '/d'}"
                               " | sglang_engine_env('0.5.23')", tmp_path)
    assert status == "FAILED!"
    assert "sglang_service_algorithm DDTREE needs an SGLang install carrying the DDTree pull request" in result["msg"]


def test_values_passed_with_dash_e_render_as_the_types_argument_specs_give_them(tmp_path):
    """`-e key=value` hands Ansible strings: the block size, the context's short form and a bool still render."""
    status, result = run_debug(
        "{'model_path': '/m', 'algorithm': 'DFLASH', 'drafter_path': '/d', 'block_size': sglang_service_block_size,"
        " 'context_length': sglang_service_context_length, 'enable_metrics': sglang_service_enable_metrics}"
        " | sglang_server_config('0.5.23')",
        tmp_path,
        "-e", "sglang_service_block_size=16", "-e", "sglang_service_context_length=128k",
        "-e", "sglang_service_enable_metrics=yes",
    )
    assert status == "SUCCESS", result
    assert result["msg"]["speculative-dflash-block-size"] == 16
    assert result["msg"]["context-length"] == 128000
    assert result["msg"]["enable-metrics"] is True
