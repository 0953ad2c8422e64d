"""A deployment the target model cannot serve is refused before any stage changes the host, when the target's
config.json is already there (a pre-staged directory, or a re-run that changes tp_size or the context): judged only
at the weights stage, `sglang_service_tp_size: 3` on the demo's 8-head model came after CUDA and the venv were
installed. A hub target not on a fresh host yet is read from the hub with a GET from the host (no venv there yet,
nothing written); only when the hub does not answer is it judged once the weights stage fetched its small files."""

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


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from specgate_sim import fixtures

    root = tmp_path_factory.mktemp("hub")
    fixtures.write_fixtures(root)
    return root


def hub_target(hub_url: str, weights_dir: Path) -> dict:
    from specgate_sim import fixtures

    return {"model_weights_target_repo": fixtures.TARGET, "model_weights_target_revision": "main",
            "model_weights_target_local_path": "", "model_weights_hub_endpoint": hub_url,
            "model_weights_dir": str(weights_dir)}


def test_a_hub_target_not_on_a_fresh_host_is_judged_from_the_hub_before_any_change(tmp_path: Path, hub_root) -> None:
    """The fresh-host case of #30: the config is read with a GET from the host (no venv, nothing written), so
    `tp_size: 3` is refused in the plan, not after CUDA, the service user and the venv were installed."""
    from specgate_sim.hub_server import running_hub

    with running_hub(hub_root) as hub:
        run = validate_on_ct200_with_local_models(
            tmp_path, {**hub_target(hub.url, tmp_path / "models-dir"), "sglang_service_tp_size": 3,
                       "sglang_service_ep_size": 1}, target_present=False)
        fetched = [r["path"] for r in hub.resolve_requests()]
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert [(f["task"], "target_limits.yml" in f["task_path"]) for f in failures][:1] == [
        ("Refuse a deployment the target model cannot serve, before its weights are downloaded", True)
    ], [(f["task"], f["res"].get("msg")) for f in failures]
    assert "8 attention heads" in failures[0]["res"]["msg"]
    assert fetched == [f"/{hub_target('', tmp_path)['model_weights_target_repo']}/resolve/main/config.json"]
    assert run.stats["changed"] == {}
    assert not (tmp_path / "models-dir").exists()


def test_a_hub_the_host_cannot_reach_yet_leaves_the_judgement_to_the_weights_stage(tmp_path: Path) -> None:
    from specgate_sim import testing

    closed = f"http://127.0.0.1:{testing.free_port()}"
    run = validate_on_ct200_with_local_models(
        tmp_path, {**hub_target(closed, tmp_path / "models-dir"), "sglang_service_tp_size": 3,
                   "sglang_service_ep_size": 1}, target_present=False)
    refuse = "Refuse a deployment the target model cannot serve, before its weights are downloaded"
    judged = [e for e in run.events if e.get("event_data", {}).get("task") == refuse]
    outcomes = [e["event"] for e in judged if e["event"].startswith("runner_on_") and e["event"] != "runner_on_start"]
    assert outcomes == ["runner_on_skipped"], outcomes
    # The hub plan that follows says the hub is unreachable (its own test); the config read stayed quiet.
    failed = [e["event_data"]["task"] for e in run.events if e["event"] == "runner_on_failed"]
    assert failed[:1] == ["Plan from hub metadata (files, bytes still missing) and check target plus drafter against "
                          "free disk"], failed
    assert run.stats["changed"] == {}
