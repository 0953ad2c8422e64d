"""A deployment the target model cannot serve is refused before any stage changes the host, when the target's
config.json is already there (a pre-staged directory, or a re-run that changes tp_size or the context): judged only
at the weights stage, `sglang_service_tp_size: 3` on the demo's 8-head model came after CUDA and the venv were
installed. A target not on the host yet is judged once its small files are fetched (target.yml), as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.preflight_runner import validate_on_ct200_with_local_models

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("settings", "reason"),
    [({"sglang_service_tp_size": 3, "sglang_service_ep_size": 1}, "8 attention heads"),
     ({"sglang_service_context_length": 8192}, "4096")],
    ids=["heads-over-tp", "context"],
)
def test_a_deployment_the_target_cannot_serve_is_refused_before_any_change(tmp_path: Path, settings, reason) -> None:
    run = validate_on_ct200_with_local_models(tmp_path, settings)
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert [(f["role"], f["task"]) for f in failures][:1] == [
        ("model_weights", "Refuse a deployment the target model cannot serve, before its weights are downloaded")
    ], [(f["role"], f["task"], f["res"].get("msg")) for f in failures]
    assert reason in failures[0]["res"]["msg"], failures[0]["res"]["msg"]
    assert "target_limits.yml" in failures[0]["task_path"]
    assert run.stats["changed"] == {}


def test_a_target_not_on_the_host_yet_is_left_to_the_weights_stage(tmp_path: Path) -> None:
    run = validate_on_ct200_with_local_models(tmp_path, {"sglang_service_tp_size": 8}, target_present=False)
    refused = [e["event_data"]["task"] for e in run.events if e["event"] == "runner_on_failed"]
    assert not [t for t in refused if "target model cannot serve" in t], refused
