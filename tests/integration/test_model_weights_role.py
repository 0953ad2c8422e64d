"""The model_weights role end to end on localhost via ansible-runner, against the local hub in sim/."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import ansible_runner
import pytest
from specgate_sim import fixtures
from specgate_sim.hub_server import running_hub

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
TOKEN = "hf_specgate_role_test"


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("hubroot")
    return root, fixtures.write_fixtures(root)


def play(tmp_path: Path, role_vars: dict[str, Any], check: bool = False, tags: str = "",
         before: tuple[str, ...] = ()) -> ansible_runner.Runner:  # fmt: skip
    """The role on localhost; ``before``: its entry points to run first, as deploy.yml runs them (target_limits)."""
    private = tmp_path / f"runner-{len(list(tmp_path.glob('runner-*')))}"
    (private / "project").mkdir(parents=True)
    (private / "inventory").mkdir()
    (private / "inventory" / "hosts").write_text(
        f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    plays = [{"name": "model_weights under test", "hosts": "localhost", "gather_facts": False,
              "pre_tasks": [{"name": f"Entry point {entry}", "ansible.builtin.include_role": {
                  "name": "model_weights", "tasks_from": entry}} for entry in before],
              "roles": ["model_weights"]}]  # fmt: skip
    (private / "project" / "play.yml").write_text(json.dumps(plays))
    (private / "env").mkdir()
    (private / "env" / "extravars").write_text(json.dumps(role_vars))
    return ansible_runner.run(
        private_data_dir=str(private), playbook="play.yml", quiet=True,
        cmdline=" ".join(([f"--tags {tags}"] if tags else []) + (["--check"] if check else [])) or None,
        envvars={
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
            "ANSIBLE_FACT_CACHING": "memory",
            "ANSIBLE_ASYNC_DIR": str(tmp_path / "async"),
        },
    )


def results(run: ansible_runner.Runner, kind: str) -> list[tuple[str, dict]]:
    return [(e["event_data"].get("task", ""), e["event_data"].get("res", {}))
            for e in run.events if e.get("event") == kind]


def role_vars(hub_url: str, weights_dir: Path, **extra: Any) -> dict[str, Any]:
    return {
        "model_weights_dir": str(weights_dir),
        "model_weights_target_repo": fixtures.TARGET,
        "model_weights_target_revision": "main",
        "model_weights_drafter_repo": fixtures.DRAFTER_B8,
        "model_weights_drafter_revision": "main",
        "model_weights_hub_endpoint": hub_url,
        "model_weights_python": sys.executable,
        "model_weights_poll_interval_s": 1,
        "model_weights_headroom_gb": 0,
        **extra,
    }


def fact(run: ansible_runner.Runner, name: str) -> Any:
    for _task, res in results(run, "runner_on_ok"):
        if name in res.get("ansible_facts", {}):
            return res["ansible_facts"][name]
    raise KeyError(name)


def test_converge_downloads_with_progress_then_a_rerun_changes_nothing(hub_root, tmp_path):
    root, summary = hub_root
    weights = tmp_path / "models"
    # Slow enough (about 4 s a file, the files in parallel) that the download outlasts several rounds of its follow
    # even when a round's host call takes seconds on a busy machine: a follow sees a job end at its first look after.
    with running_hub(root, [TOKEN], throttle_bps=50_000) as hub:
        first = play(tmp_path, role_vars(hub.url, weights, model_weights_requested_block_size=16))
        assert first.status == "successful", results(first, "runner_on_failed")
        # One task follows the whole download (no task file including itself per poll), one line a round but the
        # last (which sees the end).
        follow = [res for task, res in results(first, "runner_on_ok") if task.startswith("Follow the download")]
        assert len(follow) == 1, follow
        assert follow[0]["polls"] >= 2, follow
        progress = [line.strip() for line in first.stdout.read().splitlines() if line.strip().startswith("[localhost]")]
        assert len(progress) == follow[0]["polls"] - 1, progress
        assert any(re.fullmatch(r"\[localhost\] weights: \d+\.\d\d / 0\.\d\d MB \(\d+%\), \d+\.\d MB/s, ETA \S+",
                                line) for line in progress), progress
        warnings = [w for _t, res in results(first, "runner_on_ok") for w in res.get("warnings", [])]
        assert any("positions 8-15 are out of distribution" in w for w in warnings), warnings
        weights_fact = fact(first, "specgate_weights")
        assert weights_fact["target_path"] == str(weights / fixtures.TARGET)
        assert weights_fact["target_revision"] == summary[fixtures.TARGET]["main"]
        assert weights_fact["drafter"] == {"block_size": 8, "num_hidden_layers": 6, "target_layer_ids": [1, 3, 5],
                                           "mask_token_id": fixtures.MASK_TOKEN_ID}
        manifest = json.loads((weights / fixtures.TARGET / ".specgate-manifest.json").read_text())
        assert manifest["commit"] == summary[fixtures.TARGET]["main"]
        assert not (weights / ".specgate-download-progress.json").exists()

        hub.state.requests.clear()
        second = play(tmp_path, role_vars(hub.url, weights, model_weights_requested_block_size=16))
        assert second.status == "successful"
        changed = [task for task, res in results(second, "runner_on_ok") if res.get("changed")]
        assert changed == []
        # metadata only: one listing per snapshot, no file request at all
        assert sorted(r["path"] for r in hub.state.requests) == sorted(
            f"/api/models/{repo}/revision/main" for repo in (fixtures.TARGET, fixtures.DRAFTER_B8))


def test_a_profile_names_its_drafter_from_the_catalog_and_swapping_profiles_swaps_it(hub_root, tmp_path):
    """configs/profiles set model_weights_drafter: the catalog entry is what is fetched, checked and published."""
    root, summary = hub_root
    weights = tmp_path / "models"
    catalog = {"dflash-b8": {"repo": fixtures.DRAFTER_B8, "revision": "main"},
               "dflash-b16": {"repo": fixtures.DRAFTER_B16, "revision": "main"}}
    with running_hub(root) as hub:
        for name, repo, block in (("dflash-b8", fixtures.DRAFTER_B8, 8), ("dflash-b16", fixtures.DRAFTER_B16, 16)):
            run = play(tmp_path, role_vars(hub.url, weights, model_weights_drafter_repo="",
                                           model_weights_drafter_revision="", model_weights_drafters=catalog,
                                           model_weights_drafter=name, model_weights_requested_block_size=16))
            assert run.status == "successful", results(run, "runner_on_failed")
            published = fact(run, "specgate_weights")
            assert published["drafter_path"] == str(weights / repo)
            assert published["drafter_revision"] == summary[repo]["main"]
            assert published["drafter"]["block_size"] == block
            warnings = [w for _t, res in results(run, "runner_on_ok") for w in res.get("warnings", [])]
            # Block 16 on the block-8 drafter warns; on the block-16 one it does not.
            assert any("out of distribution" in w for w in warnings) is (block < 16), warnings
        none = play(tmp_path, role_vars(hub.url, weights, model_weights_drafter_repo="", model_weights_drafters=catalog,
                                        model_weights_drafter="none"))
        assert none.status == "successful", results(none, "runner_on_failed")
        assert fact(none, "specgate_weights")["drafter_path"] is None


def test_a_drafter_the_hub_lacks_is_named_as_the_user_set_it(hub_root, tmp_path):
    """A catalog entry's failure names the entry (it once named model_weights_drafter_repo, which the user never set);
    a sweep drafter's names its key (it once read model_weights_drafter dflash-missing_repo)."""
    catalog = {"dflash-b8": {"repo": "specgate-fixtures/no-such-drafter", "revision": "main"}}
    missing = [{"key": "dflash-missing", "repo": "specgate-fixtures/no-such-sweep-drafter", "revision": "main"}]
    with running_hub(hub_root[0]) as hub:
        for extra, named in (
            ({"model_weights_drafters": catalog, "model_weights_drafter": "dflash-b8"},
             "check model_weights_drafters['dflash-b8'].repo"),
            ({"model_weights_sweep_drafters": missing},
             "check the sweep drafter dflash-missing's repo (spec_sweep_grid / spec_sweep_configs)"),
        ):  # fmt: skip
            run = play(tmp_path, role_vars(hub.url, tmp_path / "models", model_weights_drafter_repo="",
                                           model_weights_drafter_revision="", **extra))  # fmt: skip
            assert run.status == "failed"
            (task, res), = results(run, "runner_on_failed")
            assert task.startswith("Plan from hub metadata"), task
            assert named in res["msg"], res["msg"]
            assert "model_weights_drafter_repo" not in res["msg"]


def test_check_mode_plans_and_writes_nothing(hub_root, tmp_path):
    with running_hub(hub_root[0]) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models"), check=True)
        assert run.status == "successful", results(run, "runner_on_failed")
        assert not (tmp_path / "models").exists()
        # Only the target's config.json is read (a few kilobytes, into memory), to judge the deployment against it.
        assert [r["path"] for r in hub.resolve_requests("GET")] == [f"/{fixtures.TARGET}/resolve/main/config.json"]


def test_broken_drafter_fails_before_the_target_shards_are_fetched(hub_root, tmp_path):
    with running_hub(hub_root[0]) as hub:
        broken = role_vars(hub.url, tmp_path / "models", model_weights_drafter_repo=fixtures.BROKEN_LAYER_IDS)
        run = play(tmp_path, broken)
        assert run.status == "failed"
        (task, res), = results(run, "runner_on_failed")
        assert task == "Read the drafter's config as SGLang does and refuse one that does not fit the target"
        assert "target_layer_ids [9] are outside the target's layers 0..7" in res["msg"]
        assert not any(r["path"].endswith(".safetensors") and fixtures.TARGET + "/" in r["path"]
                       for r in hub.resolve_requests("GET"))


@pytest.mark.parametrize(
    ("deployment", "named"),
    [
        ({"context_length": "8k"}, "sglang_service_context_length 8000 is longer than the model's own context (4096"),
        ({"tp_size": 16}, "sglang_service_tp_size 16 splits attention over 16 GPUs"),
    ],
    ids=["context-longer-than-the-model", "tp-that-cannot-split-the-heads"],
)
def test_a_deployment_the_target_cannot_serve_fails_before_its_weights_are_fetched(hub_root, tmp_path, deployment,
                                                                                   named):
    """SGLang refuses these once the weights are loaded; the target's config.json (kilobytes) tells before hours of
    download. Without a drafter too: the small files come first whatever the deployment."""
    with running_hub(hub_root[0]) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models", model_weights_drafter_repo="",
                                       model_weights_deployment=deployment))
        assert run.status == "failed"
        (task, res), = results(run, "runner_on_failed")
        assert task == "Refuse a deployment the target model cannot serve, before its weights are downloaded"
        assert named in res["msg"]
        fetched = [r["path"] for r in hub.resolve_requests("GET")]
        assert any(path.endswith("/config.json") for path in fetched), fetched
        assert not any(path.endswith(".safetensors") for path in fetched), fetched


def test_gated_target_without_token_fails_at_the_plan_naming_the_token(hub_root, tmp_path):
    with running_hub(hub_root[0], [TOKEN]) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models", model_weights_target_repo=fixtures.TARGET_GATED))
        (task, res), = results(run, "runner_on_failed")
        assert task.startswith("Plan from hub metadata")
        assert "model_weights_hf_token" in res["msg"]
        assert TOKEN not in json.dumps(list(run.events))


def test_token_reaches_the_hub_and_never_the_output(hub_root, tmp_path):
    with running_hub(hub_root[0], [TOKEN]) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models", model_weights_target_repo=fixtures.TARGET_GATED,
                                       model_weights_hf_token=TOKEN))
        assert run.status == "successful", results(run, "runner_on_failed")
        assert TOKEN not in json.dumps(list(run.events))
        assert TOKEN not in run.stdout.read()


def test_a_sweeps_drafters_are_each_downloaded_once_checked_and_published_by_key(hub_root, tmp_path):
    """Issue 17: model_weights_sweep_drafters (what spec_sweep publishes from its points) are fetched beside the
    deployment's drafter through the same download, each checked against the target, and published in
    specgate_weights.drafters by key with the path, the pinned commit and the trained block size."""
    root, summary = hub_root
    weights = tmp_path / "models"
    staged = tmp_path / "nfs" / "b16"
    shutil.copytree(summary[fixtures.DRAFTER_B16]["path"], staged)
    sweep = [{"key": "dflash-b16", "name": "dflash-b16", "repo": fixtures.DRAFTER_B16, "revision": "main"},
             {"key": "staged", "name": "staged", "local_path": str(staged)}]  # fmt: skip
    with running_hub(root) as hub:
        run = play(tmp_path, role_vars(hub.url, weights, model_weights_sweep_drafters=sweep))
        assert run.status == "successful", results(run, "runner_on_failed")
        plan = next(res for task, res in results(run, "runner_on_ok") if task.startswith("Plan from hub metadata"))
        assert [s["name"] for s in plan["snapshots"]] == ["drafter", "drafter dflash-b16", "drafter staged", "target"]
        published = fact(run, "specgate_weights")
        assert published["drafter_path"] == str(weights / fixtures.DRAFTER_B8)
        assert published["drafters"] == {
            "dflash-b16": {"path": str(weights / fixtures.DRAFTER_B16),
                           "revision": summary[fixtures.DRAFTER_B16]["main"],
                           "drafter": {"block_size": 16, "num_hidden_layers": 4, "target_layer_ids": [1, 3, 5],
                                       "mask_token_id": fixtures.MASK_TOKEN_ID}},
            "staged": {"path": str(staged), "revision": None,
                       "drafter": {"block_size": 16, "num_hidden_layers": 4, "target_layer_ids": [1, 3, 5],
                                   "mask_token_id": fixtures.MASK_TOKEN_ID}}}  # fmt: skip
        assert (weights / fixtures.DRAFTER_B16 / ".specgate-manifest.json").is_file()
        hub.state.requests.clear()
        again = play(tmp_path, role_vars(hub.url, weights, model_weights_sweep_drafters=sweep))
        assert again.status == "successful", results(again, "runner_on_failed")
        # one download each: a re-run only lists each hub snapshot once
        repos = (fixtures.TARGET, fixtures.DRAFTER_B8, fixtures.DRAFTER_B16)
        assert sorted(r["path"] for r in hub.state.requests) == sorted(f"/api/models/{r}/revision/main" for r in repos)


@pytest.mark.parametrize(
    ("sweep", "named"),
    [
        ([{"key": "b16", "repo": fixtures.DRAFTER_B16}], "each needs a unique key and either {repo, revision}"),
        ([{"key": "b16", "repo": fixtures.DRAFTER_B16, "revision": "main", "local_path": "/srv/d"}],
         "or {local_path}, not both"),
        ([{"repo": fixtures.DRAFTER_B16, "revision": "main"}], "model_weights_sweep_drafters"),
    ],
)
def test_a_bad_sweep_drafter_is_refused_before_the_hub_is_asked(tmp_path, sweep, named):
    with running_hub(tmp_path) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models", model_weights_sweep_drafters=sweep))
        (_task, res), = results(run, "runner_on_failed")
        said = " ".join(item.get("msg", "") for item in res.get("results", [])) or res["msg"]
        assert named in said
        assert hub.state.requests == []


def test_contradictory_target_settings_fail_naming_both_variables(tmp_path):
    run = play(tmp_path, role_vars("http://127.0.0.1:9", tmp_path / "models",
                                   model_weights_target_local_path=str(tmp_path)))
    (task, res), = results(run, "runner_on_failed")
    assert task == "Require exactly one source for the target (a hub repo or a pre-staged directory)"
    assert "model_weights_target_repo" in res["msg"]
    assert "model_weights_target_local_path" in res["msg"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_disk_too_small_fails_before_anything_is_downloaded(hub_root, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], check=True)
    try:
        with running_hub(hub_root[0]) as hub:
            run = play(tmp_path, role_vars(hub.url, small / "models"))
            (task, res), = results(run, "runner_on_failed")
            assert task.startswith("Plan from hub metadata")
            assert f"more on {small} (drafter 0.0 GB + target 0.0 GB), 0.0 GB free" in res["msg"]
            assert "Fix: free space there, or set model_weights_dir to a filesystem with room" in res["msg"]
            assert list(small.iterdir()) == []
            assert hub.resolve_requests("GET") == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_the_disk_check_counts_every_sweep_drafter_and_names_the_variable(hub_root, tmp_path):
    """Issue 17: target and deployment drafter fit; with the sweep's drafter they do not: refused before anything is
    downloaded, the message naming model_weights_sweep_drafters and the fix."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], check=True)
    try:
        with running_hub(hub_root[0]) as hub:
            sweep = [{"key": "dflash-b16", "repo": fixtures.DRAFTER_B16, "revision": "main"}]
            run = play(tmp_path, role_vars(hub.url, small / "models", model_weights_sweep_drafters=sweep))
            (task, res), = results(run, "runner_on_failed")
            assert task.startswith("Plan from hub metadata")
            assert "(drafter 0.0 GB + drafter dflash-b16 0.0 GB + target 0.0 GB)" in res["msg"]
            assert "model_weights_sweep_drafters: dflash-b16, from spec_sweep_grid / spec_sweep_configs" in res["msg"]
            assert list(small.iterdir()) == []
            assert hub.resolve_requests("GET") == []
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_prestaged_target_and_drafter_need_no_hub_and_are_not_written(hub_root, tmp_path):
    summary = hub_root[1]
    staged = tmp_path / "nfs"
    shutil.copytree(summary[fixtures.TARGET]["path"], staged / "target")
    shutil.copytree(summary[fixtures.DRAFTER_B16]["path"], staged / "drafter")
    before = sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*"))
    run = play(tmp_path, role_vars("http://127.0.0.1:9", tmp_path / "models", model_weights_target_repo="",
                                   model_weights_drafter_repo="",
                                   model_weights_target_local_path=str(staged / "target"),
                                   model_weights_drafter_local_path=str(staged / "drafter")),
               before=("validate", "target_limits"))  # as deploy.yml runs them
    assert run.status == "successful", results(run, "runner_on_failed")
    # The config on the host already is read and judged once, by the entry point: the target step does not again.
    reads = [res for task, res in results(run, "runner_on_ok") if task.startswith("Read the target's config")]
    judged = [task for task, _res in results(run, "runner_on_ok") if task.startswith("Refuse a deployment the target")]
    assert len(reads) == 1, reads
    assert "content" in reads[0], reads
    assert len(judged) == 1, judged
    weights_fact = fact(run, "specgate_weights")
    assert weights_fact["target_path"] == str(staged / "target")
    assert weights_fact["drafter_path"] == str(staged / "drafter")
    assert weights_fact["drafter"]["block_size"] == 16
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*")) == before
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"model_weights_drafter_local_path": "/srv/drafter"}, "model_weights_drafter_repo / _local_path is"),
        ({"model_weights_drafters": {"b8": {"repo": fixtures.DRAFTER_B8}}, "model_weights_drafter_repo": "",
          "model_weights_drafter": "b8"}, "model_weights_drafters[b8] is"),
        ({"model_weights_drafter": "b16"}, "it is not an entry of model_weights_drafters (empty)"),
        ({"model_weights_drafters": {"b8": {"repo": fixtures.DRAFTER_B8, "revision": "main"}},
          "model_weights_drafter": "b8"}, "model_weights_drafter_repo / _local_path are set too"),
        ({"model_weights_target_revision": ""}, "model_weights_target_revision"),
        ({"model_weights_max_workers": 0}, "model_weights_max_workers is 0: it must be a whole number >= 1"),
        ({"model_weights_headroom_gb": "-5"}, "model_weights_headroom_gb is '-5': it must be a number >= 0"),
        ({"model_weights_drafter_kind": "eagle"}, "model_weights_drafter_kind"),
    ],
)
def test_bad_settings_fail_before_the_hub_is_asked_naming_the_variable(tmp_path, bad, named):
    with running_hub(tmp_path) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models", **bad))
        (_task, res), = results(run, "runner_on_failed")
        assert named in res["msg"]
        assert hub.state.requests == []


def test_the_download_phase_alone_still_plans_and_checks_first(hub_root, tmp_path):
    with running_hub(hub_root[0]) as hub:
        run = play(tmp_path, role_vars(hub.url, tmp_path / "models"), tags="model_weights_download")
        assert run.status == "successful", results(run, "runner_on_failed")
        tasks = [task for task, _res in results(run, "runner_on_ok")]
        assert tasks.index("Plan from hub metadata (files, bytes still missing) and check target plus drafter "
                           "against free disk") < tasks.index("Start the pinned download in the background (a polled "
                                                              "job, so progress can be shown)")
        assert (tmp_path / "models" / fixtures.TARGET / ".specgate-manifest.json").is_file()
