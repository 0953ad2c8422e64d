"""Which unit test modules are host-side tests (scripts/test_host_pythons runs them on Python 3.10 - 3.13): those
whose `pytestmark` carries `pytest.mark.host`. Read from the source, not by importing, so a controller-only module
(one needing ansible's controller side, numpy...) is never imported on a host Python.

    python tests/unit/host_set.py    prints their paths, one a line
"""

from __future__ import annotations

import ast
from pathlib import Path

UNIT = Path(__file__).resolve().parent

# Unit test modules that are not host-side tests, and why. Every other tests/unit/test_*.py carries
# `pytestmark = pytest.mark.host` (alone or in a list); test_host_code.py holds both to that.
CONTROLLER_ONLY = {
    "test_ansiballz_bytecode": "the module payloads' bytecode is built on the controller (specgate.project's callback)",
    "test_bench_noop_redeploy": "scripts/bench_noop_redeploy.py runs on the controller (ansible-runner)",
    "test_bench_fleet_rollout": "scripts/bench_fleet_rollout.py runs on the controller (ansible-runner)",
    "test_build_wheelhouse": "scripts/build_wheelhouse.py builds the hosts' wheelhouses on the controller",
    "test_follow_round": "the follow actions run a round on the controller (the host side is test_job_wait)",
    "test_converged_image": "scripts/converged_image.py builds the test bed's snapshot on the controller",
    "test_debian_mirror": "scripts/debian_mirror.py runs on the controller",
    "test_fleet_timeline": "fleet_rollout_timeline draws on the controller (matplotlib) with the fleet report",
    "test_sglang_monitoring_filters": "filter_plugins run on the controller",
    "test_monitor_scrape": "monitor/scrape.py runs in a filter on the controller, building Prometheus's configuration",
    "test_monitor_textfile": "sglang_monitoring_textfile is a filter: prometheus_client renders it on the controller",
    "test_run_changes": "scripts/run_changes.py reads ansible-runner events on the controller",
    "test_failure_reasons": "scripts/failure_reasons.py reads test reports on the machine that runs the suite",
    "test_fast_tier_guard": "the root conftest.py's guard runs in the suite's own pytest",
    "test_engine_plan": "library/sglang_env_plan plans the engine on the controller (packaging reads its pins)",
    "test_include_loops": "reads playbooks/, roles/ and molecule/ YAML",
    "test_install_collections": "scripts/install_collections.py runs on the controller",
    "test_run_outcome": "module_utils/specgate/common/run_outcome.py backs the summary filters (controller)",
    "test_ranges": "module_utils/specgate/common/ranges.py backs the specgate_range_refusal filter (controller)",
    "test_node_group": "drives the sglang_nodes filter plugin (controller-side, needs ansible.errors)",
    "test_node_topology": "drives the sglang_nodes filter plugin (controller-side, needs ansible.errors)",
    "test_noop_rerun_reads": "reads playbooks/ and roles/ YAML",
    "test_readme_commands": "reads README.md and the tests' registry on the controller",
    "test_role_contracts": "reads roles/ YAML",
    "test_settings_stated_once": "reads roles/ YAML and the project's Python source",
    "test_sglang_env_plan": "library/sglang_env_plan plans the venv on the controller (packaging reads its pins)",
    "test_sglang_config_filter": "a filter plugin: controller-side, needs ansible.errors",
    "test_sglang_release_filters": "a filter plugin: controller-side, needs ansible.errors",
    "test_sglang_resolve": "its fixtures come from specgate_sim.fixtures (numpy, safetensors, tokenizers)",
    "test_module_docs": "runs the controller's ansible-doc over library/",
    "test_spec_gate_accept_ceiling": "a filter plugin: controller-side, judged in the settings check",
    "test_shipped_configs": "validates configs/, which the controller renders",
    "test_sglang_flags_contract": "reads roles/ YAML",
    "test_sweep_manifest": "drives the sweep's resume and report (controller-side: jinja2, matplotlib)",
    "test_sweep_surfaces": "scripts/sweep_surfaces.py generates the search benchmark's surfaces on the controller",
    "test_sweep_field_notes": "drives the sweep (controller-side) over the sim's engine (specgate_sim)",
    "test_sweep_grid": "the sweep plans on the controller (module_utils/specgate/sweep needs jinja2)",
    "test_sweep_module_docs": "runs the controller's ansible-doc on the controller-only sweep module",
    "test_sweep_pick": "the sweep picks its winners on the controller",
    "test_sweep_plots": "matplotlib draws the sweep report on the controller",
    "test_sweep_progress": "the sweep's progress lines are printed on the controller",
    "test_sweep_repeats": "the sweep's repeats are planned on the controller (library/spec_sweep_state)",
    "test_sweep_report": "the sweep report is written on the controller",
    "test_sweep_run": "the sweep's loop and report run on the controller (library/spec_sweep_state delegates there)",
    "test_sweep_resume": "drives the sweep (controller-side) through scripts/bench_sweep_search.py and the sim",
    "test_sweep_search": "drives the sweep (controller-side) through scripts/bench_sweep_search.py and the sim",
    "test_troubleshooting": "scripts/gen_troubleshooting.py reads roles/ YAML and the docs on the controller",
    "test_entry_point_specs": "reads the playbooks and argument_specs on the controller",
    "test_import_direction": "reads the source tree's imports on the controller",
    "test_project_dir": "a filter plugin: controller-side, templated in the roles' defaults",
    "test_variable_names": "a filter plugin: controller-side, judged by preflight on the controller",
}


def unit_test_modules() -> list[Path]:
    return sorted(UNIT.glob("test_*.py"))


def marks_host(path: Path) -> bool:
    """True when the module's top-level `pytestmark` is pytest.mark.host or a list/tuple holding it."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            return any(ast.unparse(mark) == "pytest.mark.host" for mark in marks)
    return False


def host_test_modules() -> list[Path]:
    return [path for path in unit_test_modules() if marks_host(path)]


if __name__ == "__main__":
    for path in host_test_modules():
        print(path)
