"""spec_sweep refuses a sweep it cannot run cleanly, naming spec_sweep_configs and the fix, before anything
is deployed. Runs only the validate tag, every case in one run over one local host per case."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import ansible_runner
import pytest
import yaml

from integration.preflight_runner import CaseRuns, run_cases

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROFILE = str(PROJECT_ROOT / "configs" / "profiles" / "bs8-b4-t4.yml")


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
SAME_DRAFTER = {"sglang_service_drafter_path": "/models/d"}
# A setting of the wrong type, as a command line gives it: refused naming the setting and the type.
WRONG_TYPES = {"spec_sweep_search": ("perhaps", "bool"), "spec_sweep_max_repeats": ("many", "int")}


def _shipped(sweep: str) -> dict:
    """A shipped sweep file's settings, with the demo inventory's drafter catalog its profiles and points name."""
    text = (PROJECT_ROOT / "configs" / "sweeps" / f"{sweep}.yml").read_text()
    # playbooks/sweep.yml's playbook_dir, which the file's profile paths start from
    settings = yaml.safe_load(text.replace("{{ playbook_dir }}", str(PROJECT_ROOT / "playbooks")))
    demo = yaml.safe_load((PROJECT_ROOT / "inventory/demo/group_vars/sglang_hosts/model.yml").read_text())
    return {**settings, "model_weights_drafters": demo["model_weights_drafters"]}


def _refusals() -> dict[str, tuple[dict, str]]:
    cases = {f"configs_{name}": ({"spec_sweep_configs": configs}, expected)
             for name, (configs, expected) in CASES.items()}
    for name, (extra, expected) in GRID_CASES.items():
        configs = [] if "spec_sweep_grid" in extra else [{"name": "a", "profile": PROFILE}]
        cases[f"grid_{name}"] = ({"spec_sweep_configs": configs, **extra}, expected)
    for name, (value, kind) in WRONG_TYPES.items():
        configs = [{"name": "a", "profile": PROFILE, "vars": SAME_DRAFTER}]
        cases[f"type_{name}"] = ({"spec_sweep_configs": configs, name: value}, f"{name}|{kind}")
    return cases


def _good() -> dict[str, dict]:
    from integration.typed_options import typed_defaults_as_strings

    two = [{"name": "a", "profile": PROFILE, "vars": SAME_DRAFTER}, {"name": "b.2", "profile": PROFILE,
                                                                      "vars": SAME_DRAFTER}]
    field_notes = _shipped("field-notes")
    return {
        "profile_plus_inline_vars": {"spec_sweep_configs": two},
        # Every typed setting of the sweep as a command line gives it: text.
        "typed_as_strings": {"spec_sweep_configs": two, **typed_defaults_as_strings("spec_sweep", "validate")},
        "shipped_field_notes": {"spec_sweep_configs": field_notes["spec_sweep_configs"],
                                "model_weights_drafters": field_notes["model_weights_drafters"]},
        **{f"shipped_{sweep.replace('-', '_')}": {"spec_sweep_configs": [], **{
            key: value for key, value in _shipped(sweep).items()
            if key in ("spec_sweep_grid", "spec_sweep_search", "model_weights_drafters")}}
           for sweep in ("field-notes-grid", "demo")},  # configs/sweeps/demo.yml is a grid
    }


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> CaseRuns:
    """Every case's validate step in one run over one local host per case (the role's checks are per host, and each
    case writes its manifest in a reports directory of its own)."""
    tmp_path = tmp_path_factory.mktemp("sweep-validate")
    cases = {name: {**settings, "spec_sweep_reports_dir": str(tmp_path / "reports" / name)}
             for name, settings in {**{n: c for n, (c, _) in _refusals().items()}, **_good()}.items()}
    play = [{"hosts": "all", "gather_facts": False, "roles": [{"role": "spec_sweep"}]}]
    return run_cases(tmp_path, play, cases, cmdline="--tags spec_sweep_validate")


@pytest.mark.parametrize("case", sorted(_refusals()))
def test_a_bad_sweep_is_refused_naming_the_problem(case, judged):
    _settings, expected = _refusals()[case]
    assert judged.failures(case), judged.stdout[-2000:]
    said = judged.said(case)
    for part in expected.split("|"):  # a wrong type: the setting and the type, each named
        assert " ".join(part.split()) in said, said[-2000:]


@pytest.mark.parametrize("case", sorted(_good()))
def test_a_good_sweep_passes_validation(case, judged):
    assert judged.failures(case) == [], judged.said(case)[-2000:]
    assert any(e["event"] == "runner_on_ok" and e["event_data"].get("task", "").startswith("Expand the grid")
               for e in judged.events[case])  # it got as far as expanding its points


def test_the_shipped_field_notes_sweep_names_its_configs():
    assert [c["name"] for c in _shipped("field-notes")["spec_sweep_configs"]] == ["bs8-b8-t4", "bs16-b32-t8",
                                                                                   "bs8-b4-t4"]


def test_every_typed_sweep_setting_is_among_the_cases_passed_as_strings():
    assert {"spec_sweep_search", "spec_sweep_tolerance", "spec_sweep_max_repeats", "spec_sweep_restore"} <= set(
        _good()["typed_as_strings"])


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
