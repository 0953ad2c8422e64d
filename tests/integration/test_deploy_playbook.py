"""deploy.yml as users run it: the fleet inventory, the stage order, and a refusal before anything changes.

Driven through ansible-runner; assertions read its events and stats, not scraped text.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import ansible_runner
import pytest
import yaml

from integration.preflight_runner import beyond_validation, run_on_copies_of_ct200

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["preflight", "cuda_toolkit", "sglang_env", "model_weights", "sglang_service", "spec_gate"]


def _inventory(path: str) -> dict:
    out, err = ansible_runner.get_inventory(
        action="list",
        inventories=[str(ROOT / path)],
        response_format="json",
        quiet=True,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
    )
    assert isinstance(out, dict), err
    return out


def test_fleet_inventory_puts_ct200_and_b300_in_sglang_hosts() -> None:
    inventory = _inventory("inventory/hosts.yml")
    members = set()
    for child in inventory["sglang_hosts"]["children"]:
        members |= set(inventory[child]["hosts"])
    assert members == {"ct200", "b300"}
    hostvars = inventory["_meta"]["hostvars"]
    assert hostvars["ct200"]["sglang_service_attention_backend"] == "triton"  # SM120: no fa3, no trtllm_mla
    assert hostvars["b300"]["sglang_service_attention_backend"] == "trtllm_mla"
    assert hostvars["ct200"]["model_weights_target_repo"] == hostvars["b300"]["model_weights_target_repo"]


def test_demo_inventory_reaches_its_container_through_podman() -> None:
    hostvars = _inventory("inventory/demo/hosts.yml")["_meta"]["hostvars"]["demo"]
    assert hostvars["ansible_connection"] == "containers.podman.podman"
    assert hostvars["sglang_service_launch_module"] == "specgate_sim.launch_server"
    assert hostvars["preflight_expect_gpus"] is False


def _tasks(tasks: list[dict]) -> list[dict]:
    """Tasks in the order they run: a block's own, then its always section (a rescue only sets facts and fails)."""
    flat = []
    for task in tasks:
        if "block" in task:
            flat += _tasks(task["block"]) + _tasks(task.get("always", []))
        elif (ROOT / "playbooks" / "tasks" / Path(str(task.get("ansible.builtin.import_tasks", "-"))).name).is_file():
            # a playbooks/tasks file (imported as tasks/x.yml from a playbook, as x.yml from a task file), inlined
            name = Path(task["ansible.builtin.import_tasks"]).name
            flat += _tasks(yaml.safe_load((ROOT / "playbooks" / "tasks" / name).read_text()))
        else:
            flat.append(task)
    return flat


def _stages(play: dict) -> list[tuple[str, str]]:
    """The play's stages in order: (role, entry point) of each import_role task."""
    return [
        (t["ansible.builtin.import_role"]["name"], t["ansible.builtin.import_role"].get("tasks_from", "main"))
        for t in _tasks(play["tasks"]) if "ansible.builtin.import_role" in t
    ]


LOCK, UNLOCK = ("sglang_service", "lock"), ("sglang_service", "unlock")


def _without_renewals(stages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The stages with the lock's lease renewals (every lock after the first) left out."""
    first = stages.index(LOCK)
    return stages[: first + 1] + [s for s in stages[first + 1 :] if s != LOCK]


def _plays() -> list[dict]:
    return yaml.safe_load((ROOT / "playbooks" / "deploy.yml").read_text())


def _deploy_play() -> dict:
    return next(p for p in _plays() if p["hosts"] == "sglang_hosts" and "serial" in p)


def _before(stages: list[tuple[str, str]], first: tuple[str, str], then: tuple[str, str]) -> bool:
    """Whether `first` runs before `then` (each at its first appearance)."""
    return stages.index(first) < stages.index(then)


def test_root_deploy_runs_the_stages_in_the_order_the_data_flow_needs() -> None:
    """The ordering rules a composition must keep, not a listing of today's tasks: a new entry point that keeps them
    passes, one that changes the host before a refusal or restarts a replica the router still sends to fails."""
    root = yaml.safe_load((ROOT / "deploy.yml").read_text())
    assert [p.get("ansible.builtin.import_playbook") for p in root] == ["playbooks/deploy.yml"]
    # The rollout's plan first, the router's and the monitor's settings judged (before any host changes), the hosts
    # in batches, the router, then the monitor (its hosts: sglang_monitors, else the routers').
    plan, router_check, monitor_check, play, router, monitor = _plays()
    assert all(role == "fleet_rollout" for role, _ in _stages(plan))
    assert plan["gather_facts"] is False
    assert (router_check["hosts"], _stages(router_check)) == ("sglang_routers", [("sglang_router", "validate")])
    assert router_check["any_errors_fatal"] is True, "a refused router setting stops every replica's play"
    assert _stages(monitor_check) == [("sglang_monitoring", "validate")]
    assert monitor_check["any_errors_fatal"] is True, "a refused monitor setting stops every replica's play"
    assert "specgate_rollout.batch_sizes" in play["serial"]  # each batch's host count: whole replicas
    assert (router["hosts"], _stages(router)) == ("sglang_routers", [("sglang_router", "main")])
    assert _stages(monitor) == [("sglang_monitoring", "main")]
    assert monitor_check["hosts"] == monitor["hosts"]
    assert "sglang_monitors" in monitor["hosts"]
    assert "sglang_routers" in monitor["hosts"]
    assert "roles" not in play, "every stage is an import_role task, in the order tasks run"
    stages = _stages(play)
    assert stages[0] == ("preflight", "main")
    read_only = ("validate", "target_limits", "lock", "unlock")
    changing = [s for s in stages if s[1] not in read_only and s != ("preflight", "main")]
    # The target's limits are judged once the service published the deployment, still before the lock.
    assert _before(stages, ("sglang_service", "validate"), ("model_weights", "target_limits"))
    assert _before(stages, ("model_weights", "target_limits"), LOCK)
    for stage in STAGES[1:]:
        # Every refusal before the first change: each stage's validate entry point runs before the change lock.
        assert _before(stages, (stage, "validate"), LOCK), f"{stage} validates after the lock is taken"
        assert _before(stages, LOCK, (stage, "main")), f"{stage} changes the host without the change lock"
    assert all(_before(stages, LOCK, s) for s in changing), "a stage runs before the change lock"
    # What a dead run left unfinished is settled before the first stage that changes the host.
    assert _before(stages, ("spec_gate", "unsettled"), (STAGES[1], "main"))
    # The data flow: each stage's main after the one it consumes.
    assert [s for s in stages if s in {(name, "main") for name in STAGES[1:]}] == [(n, "main") for n in STAGES[1:]]
    # Out of the router, and the known-good reference measured while it still serves, before the replica restarts;
    # both only once the candidate (whether the release switches) is known.
    for step in (("fleet_rollout", "leave"), ("spec_gate", "reference")):
        assert _before(stages, ("sglang_service", "candidate"), step)
        assert _before(stages, step, ("sglang_service", "main")), f"{step} after the restart"
    # Back into the router and the batch's go/no-go only after the lock is released, whatever the gate decided.
    assert stages.index(("fleet_rollout", "rejoin")) > len(stages) - 1 - stages[::-1].index(UNLOCK)
    assert _before(stages, ("fleet_rollout", "rejoin"), ("fleet_rollout", "finish"))
    service = next(t for t in _tasks(play["tasks"]) if t["ansible.builtin.import_role"] == {"name": "sglang_service"})
    assert service["vars"]["sglang_service_promote_on_success"] is False, "the gate, not the service, promotes"


def test_the_change_lock_is_released_on_every_exit_and_renewed_before_each_long_stage() -> None:
    play = _deploy_play()
    locked = next(t for t in play["tasks"] if "block" in t)
    assert _stages({"tasks": locked["always"]}) == [
        UNLOCK, ("fleet_rollout", "rejoin"), ("sglang_monitoring", "textfile"), ("fleet_rollout", "finish")]
    # After the lock is released, one summary block per host, whatever the run's outcome, then the fleet's verdict.
    assert locked["always"][-2]["ansible.builtin.import_tasks"] == "tasks/summary.yml"
    stages = _stages({"tasks": locked["block"]})
    long_stages = [("sglang_env", "main"), ("model_weights", "main"), ("sglang_service", "main"), ("spec_gate", "main")]
    for before, stage in itertools.pairwise(long_stages):
        assert LOCK in stages[stages.index(before) + 1 : stages.index(stage)], f"no lease renewal before {stage}"
    for playbook in ["sweep.yml", "rollback.yml", "bench.yml"]:
        tasks = yaml.safe_load((ROOT / "playbooks" / playbook).read_text())[0]["tasks"]
        block = next(t for t in tasks if "block" in t)
        first = block["block"][0]
        assert (first.get("ansible.builtin.import_role") or first.get("ansible.builtin.include_role"))[
            "tasks_from"
        ] == "lock"
        roles = [t.get("ansible.builtin.import_role") or t.get("ansible.builtin.include_role")
                 for t in _tasks(block["always"])]
        # A sweep reads what serves from the host for its summary: the last fact a point published may be stale. A
        # rollback changes what serves: the node exporter's textfile says so.
        expected = {"sweep.yml": ["unlock", "current"], "rollback.yml": ["unlock", "textfile"], "bench.yml": ["unlock"]}
        assert [r["tasks_from"] for r in roles if r] == expected[playbook], playbook
        if playbook != "bench.yml":  # a sweep and a rollback end with their summary block, after the unlock
            assert _tasks(block["always"])[-1]["name"] == "Summary - what this run left on the host", playbook


def test_sweep_validates_and_provisions_like_deploy_then_sweeps() -> None:
    deploy = _deploy_play()
    sweep = yaml.safe_load((ROOT / "playbooks" / "sweep.yml").read_text())[0]
    # deploy.yml's path up to the last provisioning stage (its validate entry points, the sweep's own after them, the
    # lock, the settling, the provisioning), then the sweep in place of the service and the gate.
    shared = _without_renewals(_stages(deploy))
    shared = shared[: shared.index(("model_weights", "main")) + 1]
    last_validate = max(i for i, s in enumerate(shared) if s[1] == "validate")
    expected = [*shared[: last_validate + 1], ("spec_sweep", "validate"), *shared[last_validate + 1 :]]
    after = [("spec_sweep", "main"), UNLOCK, ("sglang_service", "current")]
    assert _without_renewals(_stages(sweep)) == [*expected, *after]
    # No feed file: each stage validates its own variables, no copy of them is passed around.
    assert "vars_files" not in sweep
    assert "vars_files" not in deploy


def test_every_stage_has_a_validate_entry_point_with_its_own_argument_specs() -> None:
    for stage in STAGES[1:]:
        spec = yaml.safe_load((ROOT / "roles" / stage / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        assert spec["validate"]["options"] == spec["main"]["options"], stage
        assert (ROOT / "roles" / stage / "tasks" / "validate.yml").is_file()


# Each case: the playbook, the bad inventory settings, the stage that refuses them and what its message names.
REFUSALS: dict[str, tuple[str, dict, str, str]] = {
    # DFLASH's own rule (pp 1), the renderer's, judged by the service's validate entry point.
    "deploy-pp2": ("deploy.yml", {"sglang_service_pp_size": 2}, "sglang_service", "sglang_service_pp_size"),
    "sweep-pp2": ("playbooks/sweep.yml", {"sglang_service_pp_size": 2}, "sglang_service", "sglang_service_pp_size"),
    # How the service fits the GPUs: judged by its validate entry point on preflight's GPU facts.
    "deploy-tp16-on-8": ("deploy.yml", {"sglang_service_tp_size": 16}, "sglang_service",
                         "needs 16 GPUs; this host has 8"),
    "deploy-fa3-on-sm120": ("deploy.yml", {"sglang_service_attention_backend": "fa3"}, "sglang_service",
                            "sglang_service_attention_backend: fa3 runs only on SM90"),
    # The toolkit against the engine's CUDA lane: sglang_env's plan, naming the toolkit's variable.
    "deploy-cuda12-for-0.5.23": ("deploy.yml", {"cuda_toolkit_version": "12.9", "cuda_toolkit_source": "apt"},
                                 "sglang_env", "cuda_toolkit_version: CUDA 12.9 does not match"),
    # A stage's argument_specs, through its own validate entry point.
    "deploy-cuda-source-conda": ("deploy.yml", {"cuda_toolkit_source": "conda"}, "cuda_toolkit",
                                 "cuda_toolkit_source"),
    "deploy-unknown-feature": ("deploy.yml", {"sglang_env_patches": [{"src": "x.patch", "provides": ["tree"]}]},
                               "sglang_env", "provides ['tree']"),
    # The gate's own settings: judged at the gate, after the switch, these left an ungated candidate serving.
    "deploy-no-concurrency": ("deploy.yml", {"spec_gate_bench_concurrency": []}, "spec_gate",
                              "spec_gate_bench_concurrency"),
    "deploy-zero-token-context": ("deploy.yml", {"spec_gate_bench_contexts": [{"name": "tiny", "tokens": 0}]},
                                  "spec_gate", "spec_gate_bench_contexts"),
    "sweep-zero-concurrency": ("playbooks/sweep.yml", {"spec_gate_bench_concurrency": [0]}, "spec_gate",
                               "spec_gate_bench_concurrency"),
    # Misspelled: Ansible would ignore them (rc 0, changed 0) and the user would believe the host reconfigured.
    "deploy-misspelled-name": ("deploy.yml", {"sglang_service_blocksize": 16}, "sglang_service",
                               "did you mean sglang_service_block_size?"),
    "deploy-misspelled-prefix": ("deploy.yml", {"sglang_servce_port": 30001}, "sglang_service",
                                 "did you mean sglang_service_port?"),
    "sweep-misspelled-name": ("playbooks/sweep.yml", {"spec_gate_run": 2}, "spec_gate", "did you mean spec_gate_runs?"),
    "deploy-misspelled-preflight": ("deploy.yml", {"preflight_expect_gpu": False}, "preflight",
                                    "did you mean preflight_expect_gpus?"),
    # A retired name is refused with what replaced it.
    "deploy-retired-name": ("deploy.yml", {"sglang_service_sglang_version": "0.5.23"}, "sglang_service",
                            "renamed to sglang_env_sglang_version"),
    # DDTREE on a stock pin: the renderer's one rule says how to declare the patched build.
    "deploy-ddtree-unpatched": ("deploy.yml", {"sglang_service_algorithm": "DDTREE"}, "sglang_service",
                                "provides: [ddtree]"),
    # Values only the renderer judges: refused before CUDA, the venv and the weights.
    "deploy-block-size-0": ("deploy.yml", {"sglang_service_block_size": 0}, "sglang_service",
                            "sglang_service_block_size must be a positive"),
    "sweep-context-length-bad-suffix": ("playbooks/sweep.yml", {"sglang_service_context_length": "128K"},
                                        "sglang_service", "sglang_service_context_length"),
    "deploy-no-drafter": ("deploy.yml", {"model_weights_drafter": "none"}, "sglang_service",
                          "set model_weights_drafter to an entry"),
    # A profile's drafter the inventory's catalog does not have: refused naming the catalog and the fix.
    "deploy-drafter-not-in-catalog": ("deploy.yml", {"model_weights_drafter": "dflash-b16"}, "model_weights",
                                      "it is not an entry of model_weights_drafters (dflash-b8)"),
    "deploy-blank-name": ("deploy.yml", {"sglang_service_served_model_name": "  "}, "sglang_service",
                          "sglang_service_served_model_name"),
    # A shortened name (tried on the demo: exit 0, "nothing to prove") is refused suggesting the declared one.
    "deploy-shortened-name": ("deploy.yml", {"spec_blocksize": 16}, "sglang_service",
                              "spec_blocksize: did you mean sglang_service_block_size?"),
}  # fmt: skip


@pytest.fixture(scope="module")
def refusal_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[dict]]]:
    """Each playbook run once over one copy of ct200 per case (preflight_runner.run_on_copies_of_ct200): per
    playbook, each copy's events. A case's copy is named after its id."""
    runs: dict[str, dict[str, list[dict]]] = {}
    for playbook in sorted({playbook for playbook, *_ in REFUSALS.values()}):
        cases = {name: bad for name, (book, bad, *_) in REFUSALS.items() if book == playbook}
        run = run_on_copies_of_ct200(tmp_path_factory.mktemp("refusals"), cases, playbook=playbook)
        runs[playbook] = {name: [e for e in run.events if e.get("event_data", {}).get("host") == name]
                          for name in cases}  # fmt: skip
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("case", list(REFUSALS))
def test_deploy_refuses_a_bad_setting_before_touching_ct200(
    refusal_runs: dict[str, dict[str, list[dict]]], case: str
) -> None:
    """deploy.yml (and sweep.yml) on ct200 with a bad inventory value stops before any stage changes the host,
    naming the variable the user sets: refused by the validate entry point of the stage that owns it."""
    playbook, _bad, role, named = REFUSALS[case]
    events = refusal_runs[playbook][case]
    failures = [e["event_data"] for e in events if e["event"] == "runner_on_failed"]
    assert len(failures) == 1, [f.get("task") for f in failures]
    assert failures[0]["role"] == role
    assert named in failures[0]["res"]["msg"]
    changed = [e["event_data"]["task"] for e in events
               if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")]  # fmt: skip
    assert changed == []
    # Nothing but the rollout's plan, preflight and the validate entry points ran: the failure is the last thing the
    # play did.
    assert beyond_validation(events) == set()


def _derived(tmp_path: Path, extravars: dict) -> dict:
    """What the stages' defaults make of the inventory: a play loading the three roles' defaults as deploy.yml's
    imports do, printing the variables that default to another stage's."""
    names = ["model_weights_requested_block_size", "sglang_service_hf_token", "spec_gate_api_key"]
    play = [{
        "hosts": "localhost", "gather_facts": False, "connection": "local",
        "vars_files": [str(ROOT / "roles" / r / "defaults" / "main.yml") for r in
                       ("model_weights", "sglang_service", "spec_gate")],
        "tasks": [{"ansible.builtin.set_fact": {"derived": {n: f"{{{{ {n} }}}}" for n in names}}}],
    }]
    private = tmp_path / "derived"
    (private / "project").mkdir(parents=True)
    (private / "project" / "play.yml").write_text(yaml.safe_dump(play))
    run = ansible_runner.run(private_data_dir=str(private), playbook="play.yml", extravars=extravars, quiet=True,
                             envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
                             cmdline=f"-e ansible_python_interpreter={sys.executable}")
    assert run.status == "successful"
    return next(e["event_data"]["res"]["ansible_facts"]["derived"] for e in run.events
                if e["event"] == "runner_on_ok" and "derived" in e["event_data"]["res"].get("ansible_facts", {}))


def test_each_shared_fact_is_set_once_and_every_stage_that_needs_it_gets_it(tmp_path: Path) -> None:
    """The block size, the hub token and the API key are each one inventory variable; the other stages' variables
    default to it (a profile's block size reaches the drafter check), and an explicit setting still wins."""
    # The block size reaches the weights stage as the service's validate entry point publishes it.
    derived = _derived(tmp_path, {"specgate_deployment": {"block_size": 16}, "model_weights_hf_token": "hf_once",
                                  "sglang_service_api_key": "sk-once-1234"})
    assert derived == {"model_weights_requested_block_size": 16, "sglang_service_hf_token": "hf_once",
                       "spec_gate_api_key": "sk-once-1234"}
    unset = _derived(tmp_path / "unset", {})
    assert unset == {"model_weights_requested_block_size": None, "sglang_service_hf_token": None,
                     "spec_gate_api_key": None}
    explicit = _derived(tmp_path / "explicit", {"sglang_service_api_key": "sk-once-1234", "spec_gate_api_key": "sk-2"})
    assert explicit["spec_gate_api_key"] == "sk-2"


def test_the_fleet_inventory_states_each_shared_fact_once() -> None:
    hostvars = _inventory("inventory/hosts.yml")["_meta"]["hostvars"]
    for host in ("ct200", "b300"):
        stated = set(hostvars[host])
        assert {"model_weights_requested_block_size", "sglang_service_hf_token", "spec_gate_api_key"} & stated == set()
        assert {"sglang_service_block_size", "model_weights_hf_token", "sglang_service_api_key"} <= stated
