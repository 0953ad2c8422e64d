"""The sglang_config filters load inside Ansible itself (controller plugins do not see module_utils on their own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = Path(sys.executable).parent / "ansible"


def run_debug(expression: str, tmp_path: Path) -> tuple[str, dict]:
    completed = subprocess.run(
        [str(ANSIBLE), "localhost", "-i", "localhost,", "-c", "local", "-m", "ansible.builtin.debug",
         "-e", f"ansible_python_interpreter={sys.executable}", "-a", f"msg={{{{ {expression} }}}}"],
        cwd=PROJECT_ROOT, env={**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path)},
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
