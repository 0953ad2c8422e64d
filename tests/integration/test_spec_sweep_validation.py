"""spec_sweep refuses a sweep it cannot run cleanly, naming spec_sweep_configs and the fix, before anything
is deployed. Runs only the validate tag on localhost through ansible-runner."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import ansible_runner
import pytest
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROFILE = str(PROJECT_ROOT / "configs" / "profiles" / "bs8-b4-t4.yml")


def run_validate(configs: list, **extra) -> tuple[str, str]:
    status, stdout, _facts = run_validate_facts(configs, **extra)
    return status, stdout


def run_validate_facts(configs: list, **extra) -> tuple[str, str, dict]:
    """run_validate, also giving the facts its tasks set."""
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "roles": [{"role": "spec_sweep"}]}]
    with tempfile.TemporaryDirectory(prefix="sweep-validate-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            playbook=play,
            inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
            extravars={"spec_sweep_configs": configs, "spec_sweep_reports_dir": private, **extra},
            cmdline="--tags spec_sweep_validate",
            envvars={
                "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
                "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
            },
            quiet=True,
        )
        facts = {k: v for e in result.events if e.get("event") == "runner_on_ok"
                 for k, v in e["event_data"].get("res", {}).get("ansible_facts", {}).items()}  # fmt: skip
        return result.status, result.stdout.read(), facts


CASES = {
    "empty": ([], "Set exactly one of spec_sweep_configs (a list of configs) and spec_sweep_grid (axes and "
                  "constraints): neither is set"),
    "unnamed": ([{"vars": {"sglang_service_block_size": 8}}], "each with a unique name"),
    "repeated": ([{"name": "a", "vars": {"sglang_service_block_size": 8}},
                  {"name": "a", "vars": {"sglang_service_block_size": 16}}], "each with a unique name"),
    "foreign_variable": ([{"name": "a", "vars": {"spec_gate_runs": 9}}], "spec_gate_runs"),
    "promotes": ([{"name": "a", "vars": {"sglang_service_promote_on_success": True}}], "never promotes"),
    "uneven": ([{"name": "a", "profile": PROFILE},
                {"name": "b", "vars": {"sglang_service_block_size": 16}}], "Config b in spec_sweep_configs lacks"),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_bad_sweep_is_refused_naming_the_problem(case):
    configs, expected = CASES[case]
    status, stdout = run_validate(configs)
    assert status == "failed", stdout[-2000:]
    assert " ".join(expected.split()) in " ".join(stdout.split())


def test_every_typed_sweep_setting_passed_as_a_command_line_string_is_accepted():
    from integration.typed_options import typed_defaults_as_strings

    typed = typed_defaults_as_strings("spec_sweep", "validate")
    assert {"spec_sweep_search", "spec_sweep_tolerance", "spec_sweep_max_repeats", "spec_sweep_restore"} <= set(typed)
    same = {"sglang_service_drafter_path": "/models/d"}
    status, stdout = run_validate([{"name": "a", "profile": PROFILE, "vars": same},
                                   {"name": "b", "profile": PROFILE, "vars": same}], **typed)  # fmt: skip
    assert status == "successful", stdout[-2000:]


@pytest.mark.parametrize(("name", "value", "kind"), [("spec_sweep_search", "perhaps", "bool"),
                                                     ("spec_sweep_max_repeats", "many", "int")])
def test_a_sweep_setting_of_the_wrong_type_is_refused_naming_it_and_the_type(name, value, kind):
    same = {"sglang_service_drafter_path": "/models/d"}
    status, stdout = run_validate([{"name": "a", "profile": PROFILE, "vars": same}], **{name: value})
    assert status == "failed"
    refusal = " ".join(stdout.split())
    assert name in refusal, stdout[-2000:]
    assert kind in refusal, stdout[-2000:]


def test_a_profile_plus_inline_vars_is_a_good_sweep():
    same = {"sglang_service_drafter_path": "/models/d"}
    status, stdout = run_validate([{"name": "a", "profile": PROFILE, "vars": same},
                                   {"name": "b.2", "profile": PROFILE, "vars": same}])  # fmt: skip
    assert status == "successful", stdout[-2000:]


@pytest.mark.parametrize(
    ("sweep", "names"),
    # configs/sweeps/demo.yml is a grid: test_the_shipped_grids_are_good_sweeps
    [("field-notes", ["bs8-b8-t4", "bs16-b32-t8", "bs8-b4-t4"])],
)
def test_the_shipped_sweeps_are_good_sweeps(sweep, names):
    text = (PROJECT_ROOT / "configs" / "sweeps" / f"{sweep}.yml").read_text()
    # playbooks/sweep.yml's playbook_dir, which the file's profile paths start from
    configs = yaml.safe_load(text.replace("{{ playbook_dir }}", str(PROJECT_ROOT / "playbooks")))["spec_sweep_configs"]
    assert [c["name"] for c in configs] == names
    # the demo's profiles name their drafters from the demo inventory's catalog
    demo = yaml.safe_load((PROJECT_ROOT / "inventory/demo/group_vars/sglang_hosts/model.yml").read_text())
    status, stdout = run_validate(configs, model_weights_drafters=demo["model_weights_drafters"])
    assert status == "successful", stdout[-2000:]


GRID = [{"name": "bs8", "axes": {"algorithm": ["DDTREE"], "block_size": [8], "budget": [4, 8], "topk": [4]}}]
GRID_CASES = {
    "both": ({"spec_sweep_configs": [{"name": "a", "profile": PROFILE}], "spec_sweep_grid": GRID},
             "Set exactly one of spec_sweep_configs (a list of configs) and spec_sweep_grid (axes and constraints): "
             "both are set"),
    "unknown_axis": ({"spec_sweep_grid": [{"axes": {"block_size": [8], "budgets": [4]}}]},
                     "spec_sweep_grid[0].axes.budgets: unknown axis"),
    "unpinned_drafter": ({"spec_sweep_grid": [{**GRID[0], "drafter": {"repo": "org/other-drafter"}}],
                          "model_weights_drafter_repo": "org/mine"},
                         "drafter org/other-drafter has no revision; pin it"),
    "unknown_drafter": ({"spec_sweep_grid": [{**GRID[0], "drafter": "dflash-b32"}],
                         "model_weights_drafters": {"dflash-b8": {"repo": "org/d8", "revision": "r8"}}},
                        "drafter dflash-b32 is not an entry of model_weights_drafters (dflash-b8). Fix: add it there"),
    "search_over_configs": ({"spec_sweep_search": True, "model_weights_drafters": {
                                "dflash-b8": {"repo": "org/d8", "revision": "r8"}}},
                            "spec_sweep_search needs spec_sweep_grid"),
    "tolerance": ({"spec_sweep_grid": GRID, "spec_sweep_tolerance": 1.5},
                  "spec_sweep_tolerance: 1.5 must be a fraction"),
    "misspelled": ({"spec_sweep_grid": GRID, "spec_sweep_idd": "fn"},
                   "spec_sweep_idd: did you mean spec_sweep_id?"),
    "max_repeats": ({"spec_sweep_grid": GRID, "spec_sweep_max_repeats": -1},
                    "spec_sweep_max_repeats: -1 must be 0 (no repeats while a point serves) or more"),
}  # fmt: skip


@pytest.mark.parametrize("case", GRID_CASES)
def test_a_bad_grid_sweep_is_refused_naming_the_variable(case):
    extra, expected = GRID_CASES[case]
    configs = extra.pop("spec_sweep_configs", [] if "spec_sweep_grid" in extra else [{"name": "a", "profile": PROFILE}])
    status, stdout = run_validate(configs, **extra)
    assert status == "failed", stdout[-2000:]
    assert " ".join(expected.split()) in " ".join(stdout.split())


@pytest.mark.parametrize("sweep", ["field-notes-grid", "demo"])
def test_the_shipped_grids_are_good_sweeps(sweep):
    grid = yaml.safe_load((PROJECT_ROOT / "configs" / "sweeps" / f"{sweep}.yml").read_text())
    # the demo's grid names its drafters from the demo inventory's catalog
    demo = yaml.safe_load((PROJECT_ROOT / "inventory/demo/group_vars/sglang_hosts/model.yml").read_text())
    status, stdout = run_validate([], spec_sweep_grid=grid["spec_sweep_grid"],
                                  spec_sweep_search=grid["spec_sweep_search"],
                                  model_weights_drafters=demo["model_weights_drafters"])  # fmt: skip
    assert status == "successful", stdout[-2000:]


def test_a_grid_of_per_point_drafters_publishes_each_drafter_to_fetch_once_for_the_weights_stage():
    """Issue 17: points name their drafters (a sub-grid's, an axis's); the sweep's validate step publishes the ones
    the weights stage must fetch besides the deployment's own, once each (specgate_sweep_plan.drafters)."""
    catalog = {"dflash-b8": {"repo": "org/d8", "revision": "r8"}, "dflash-b16": {"repo": "org/d16", "revision": "r16"}}
    grid = [{"name": "b", "axes": {"algorithm": ["DFLASH"], "block_size": [8, 16],
                                   "drafter": ["dflash-b8", "dflash-b16"]}},
            {"name": "c", "axes": {"algorithm": ["DFLASH"], "block_size": [32]},
             "drafter": {"repo": "org/d32", "revision": "r32"}}]  # fmt: skip
    status, stdout, facts = run_validate_facts([], spec_sweep_grid=grid, model_weights_drafters=catalog,
                                               model_weights_drafter="dflash-b8")  # fmt: skip
    assert status == "successful", stdout[-3000:]
    assert facts["specgate_sweep_plan"]["drafters"] == [
        {"key": "dflash-b16", "name": "dflash-b16", "repo": "org/d16", "revision": "r16", "local_path": None},
        {"key": "org/d32", "name": None, "repo": "org/d32", "revision": "r32", "local_path": None}]


def test_a_rerun_under_another_benchmark_matrix_is_refused_or_continues_in_a_fresh_id(tmp_path):
    """The sweep id's manifest through the role: recorded by the first run, a re-run whose matrix changed is refused in
    validate (before anything changes) naming the setting; with spec_sweep_on_change: new it measures in id.2."""
    configs = [{"name": "a", "vars": {"sglang_service_block_size": 8}}]
    common = {"spec_sweep_reports_dir": str(tmp_path), "spec_sweep_id": "fn"}
    status, stdout, _ = run_validate_facts(configs, spec_gate_runs=3, **common)
    assert status == "successful", stdout[-2000:]
    sweep_dir = tmp_path / "localhost" / "sweeps" / "fn"
    recorded = yaml.safe_load((sweep_dir / "manifest.json").read_text())
    assert recorded["conditions"]["matrix"]["spec_gate_runs"] == 3
    (sweep_dir / "a.json").write_text('{"name": "a", "status": "ok"}')  # a row measured under it

    status, stdout, _ = run_validate_facts(configs, spec_gate_runs=5, **common)
    assert status == "failed"
    assert "spec_sweep_id fn: its rows were measured under other conditions" in " ".join(stdout.split())
    assert "spec_gate_runs 3 -> 5" in stdout
    assert yaml.safe_load((sweep_dir / "manifest.json").read_text()) == recorded

    status, stdout, facts = run_validate_facts(configs, spec_gate_runs=5, spec_sweep_on_change="new", **common)
    assert status == "successful", stdout[-2000:]
    assert facts["_spec_sweep_name"] == "fn.2"
    continued = yaml.safe_load((tmp_path / "localhost" / "sweeps" / "fn.2" / "manifest.json").read_text())
    assert continued["continues"] == "fn"
