"""The sglang_config_check module run by Ansible itself (AnsiballZ packaging, check mode, failure output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from specgate_sim.fixtures import dflash_config, target_config

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANSIBLE = Path(sys.executable).parent / "ansible"


@pytest.fixture
def models(tmp_path):
    for name, config in (("target", target_config()), ("drafter", dflash_config(8, 2, [1, 2]))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
    return tmp_path


def run_module(config: Path | str, tmp_path: Path, source: str = "config") -> tuple[str, dict]:
    """(status as Ansible printed it: SUCCESS or FAILED!, the module's result). ``source`` "content" passes
    the config's text instead of its path."""
    given = {"config": str(config), "content": str(config)} if source == "both" else {source: str(config)}
    return run_args({**given, "environment": {"SGLANG_DDTREE_MAX_TOPK": "4", "HF_TOKEN": "hf_secret"}}, tmp_path)


def run_args(given: dict, tmp_path: Path) -> tuple[str, dict]:
    """The module with these arguments (python and the sim's server-args module added), in check mode."""
    args = json.dumps({"python": sys.executable, "server_args_module": "specgate_sim.server_args", **given})
    # The result as JSON to parse (ansible.cfg prints YAML for people).
    env = {**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    completed = subprocess.run(
        [str(ANSIBLE), "localhost", "-i", "localhost,", "-c", "local", "--check", "-m", "sglang_config_check",
         "-e", f"ansible_python_interpreter={sys.executable}", "-a", args],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    # ad-hoc output: "localhost | SUCCESS => {...}" (or FAILED! =>); the JSON is the module's result
    head, marker, payload = completed.stdout.partition(" => ")
    assert marker, f"no module result from ansible:\n{completed.stdout}\n{completed.stderr}"
    return head.rsplit("| ", 1)[-1].strip(), json.loads(payload)


def write(path: Path, lines: dict) -> Path:
    path.write_text("".join(f"{k}: {v}\n" for k, v in lines.items()))
    return path


def test_module_accepts_a_valid_config_in_check_mode_and_reports_the_resolution(models, tmp_path):
    config = write(tmp_path / "good.yaml", {"model-path": models / "target", "speculative-algorithm": "DFLASH",
                                            "speculative-draft-model-path": models / "drafter"})
    status, result = run_module(config, tmp_path)
    assert status == "SUCCESS", result.get("msg")
    assert result["changed"] is False
    assert result["resolved"]["speculative_num_draft_tokens"] == 8  # from the drafter's config.json
    assert result["environment"] == {"SGLANG_DDTREE_MAX_TOPK": "4", "HF_TOKEN": "********"}


def test_module_fails_the_task_with_the_resolvers_message(models, tmp_path):
    config = write(tmp_path / "bad.yaml", {"model-path": models / "target", "speculative-algorithm": "DFLASH",
                                           "speculative-draft-model-path": models / "drafter",
                                           "speculative-dflash-block-size": 0})
    status, result = run_module(config, tmp_path)
    assert status == "FAILED!"
    assert result["rejected"] is True
    assert result["msg"] == "ValueError: DFLASH requires --speculative-dflash-block-size to be positive, got 0."


def test_module_checks_a_config_given_as_content_and_leaves_no_file(models, tmp_path, monkeypatch):
    checks_tmp = tmp_path / "tmp"
    checks_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(checks_tmp))
    text = (f"model-path: {models / 'target'}\nspeculative-algorithm: DFLASH\n"
            f"speculative-draft-model-path: {models / 'drafter'}\nspeculative-dflash-block-size: 0\n")
    status, result = run_module(text, tmp_path, source="content")
    assert status == "FAILED!"
    assert result["msg"] == "ValueError: DFLASH requires --speculative-dflash-block-size to be positive, got 0."
    status, result = run_module(text.replace("block-size: 0", "block-size: 16"), tmp_path, source="content")
    assert status == "SUCCESS", result.get("msg")
    assert result["resolved"]["speculative_dflash_block_size"] == 16
    assert [p.name for p in checks_tmp.iterdir() if p.name.startswith("sglang-config-check-")] == []


def test_module_wants_exactly_one_of_config_and_content(models, tmp_path):
    status, result = run_module(tmp_path / "x.yaml", tmp_path, source="both")
    assert status == "FAILED!"
    assert result["msg"] == "parameters are mutually exclusive: config|content|configs"


def test_module_judges_several_configs_in_one_run_each_answer_returned_nothing_left(models, tmp_path, monkeypatch):
    """A sweep's points at once: a rejection is an answer per config (the task succeeds), in order, with SGLang's own
    message; the temporary files are gone."""
    checks_tmp = tmp_path / "tmp"
    checks_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(checks_tmp))
    text = (f"model-path: {models / 'target'}\nspeculative-algorithm: DFLASH\n"
            f"speculative-draft-model-path: {models / 'drafter'}\nspeculative-dflash-block-size: BLOCK\n")
    configs = [{"name": "bs16", "content": text.replace("BLOCK", "16"), "environment": {}},
               {"name": "bs0", "content": text.replace("BLOCK", "0"), "environment": {"HF_TOKEN": "x"}}]
    status, result = run_args({"configs": configs}, tmp_path)
    assert status == "SUCCESS", result.get("msg")
    assert [(r["name"], r["rejected"]) for r in result["results"]] == [("bs16", False), ("bs0", True)]
    assert result["results"][1]["message"] == (
        "ValueError: DFLASH requires --speculative-dflash-block-size to be positive, got 0.")
    assert result["message"] == "1 of 2 configs rejected"
    assert [p.name for p in checks_tmp.iterdir() if p.name.startswith("sglang-config-check-")] == []
    status, result = run_args({"configs": [{"content": "x: 1"}]}, tmp_path)
    assert status == "FAILED!"
    assert result["msg"] == "configs[0]: give each config as {name, content, environment}"
