"""SGLang's own parser, resolver and launcher checks, per supported version, on every shipped profile x preset,
on known-bad configs, and on rendered configs only the launcher refuses ("launcher refuses" table).

Needs the CPU resolver venv (scripts/setup_sglang_resolver_venv). One driver process per SGLang version
resolves all of that version's cases; the versions run concurrently.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.common.engine import SUPPORTED_VERSIONS
from resolver_cases import (
    DDTREE_ONLY_KEYS,
    KNOWN_BAD,
    LAUNCHER_CHECKS_DFLASH,
    Case,
    expand,
    expected_error,
    feature_cases,
    launch_driver,
    launcher_refuses_cases,
    multinode_cases,
    require_resolver_venv,
    shipped_cases,
    use_resolver_env,
    write_case_files,
)

pytestmark = pytest.mark.peer
DRIVER_TIMEOUT_S = 300


def _cases(version: str) -> list[Case]:
    return [*shipped_cases(version), *feature_cases(version), *(c for c in KNOWN_BAD if version in c.versions),
            *launcher_refuses_cases(version), *multinode_cases(version)]


@pytest.fixture(scope="session")
def peer_results(model_dirs, tmp_path_factory):
    """{version: {"results": {case id: result}, "options": set, "configs": {case id: config as rendered}}}."""
    venv = require_resolver_venv()
    missing = [v for v in SUPPORTED_VERSIONS if not (venv / "versions" / v / ".specgate-complete").exists()]
    if missing:
        pytest.fail(f"SGLang {missing} missing from {venv}: run scripts/setup_sglang_resolver_venv {' '.join(missing)}")
    runs = {}
    for version in SUPPORTED_VERSIONS:
        work = tmp_path_factory.mktemp(f"sglang-{version}")
        cases = _cases(version)
        requests = write_case_files(cases, version, model_dirs, work, stock=True)
        configs = {case.id: expand(case.config, version, model_dirs) for case in cases}
        runs[version] = (launch_driver(version, requests, work), work, configs)
    answers = {}
    for version, (process, work, configs) in runs.items():
        code = process.wait(timeout=DRIVER_TIMEOUT_S)
        log = (work / "stderr.log").read_text()[-3000:]
        assert code == 0, f"the resolver driver failed under SGLang {version}:\n{log}"
        data = json.loads((work / "result.json").read_text())
        answers[version] = {
            "results": {r["id"]: r for r in data["results"]},
            "options": set(data["option_strings"]),
            "configs": configs,
        }
    return answers


def _params(builder):
    return [pytest.param(v, c, id=f"{v}-{c.id}") for v in SUPPORTED_VERSIONS for c in builder(v)]


@pytest.mark.parametrize(("version", "case"), _params(lambda v: [*shipped_cases(v), *feature_cases(v)]))
def test_rendered_config_resolves_under_sglang(version, case, peer_results):
    result = peer_results[version]["results"][case.id]
    assert result["ok"], f"SGLang {version} rejected {case.id}: {result['error']}"
    case.check(result["resolved"], version)


@pytest.mark.parametrize(("version", "case"), _params(lambda v: [*shipped_cases(v), *feature_cases(v)]))
def test_every_rendered_key_is_an_exact_option_string(version, case, peer_results):
    options = peer_results[version]["options"]
    inexact = [k for k in peer_results[version]["configs"][case.id] if f"--{k}" not in options
               and k not in DDTREE_ONLY_KEYS]
    assert not inexact, f"SGLang {version} has no option {inexact} (a prefix would parse silently)"


@pytest.mark.parametrize(("version", "case"), [pytest.param(v, c, id=f"{v}-{c.id}") for v in SUPPORTED_VERSIONS
                                               for c in KNOWN_BAD if v in c.versions])
def test_known_bad_config_is_rejected_with_sglangs_own_message(version, case, peer_results):
    result = peer_results[version]["results"][case.id]
    assert not result["ok"], f"SGLang {version} accepted {case.id}"
    assert expected_error(case, version) in result["error"], f"SGLang {version} said: {result['error']}"


@pytest.mark.parametrize(("version", "case"), _params(launcher_refuses_cases))
def test_launcher_refuses_what_resolution_accepts_and_the_check_refuses_it_too(version, case, peer_results):
    """The stage proves the point: parsing and resolution passed, and the launcher's own check refused."""
    result = peer_results[version]["results"][case.id]
    assert not result["ok"], f"SGLang {version} accepted {case.id} (launcher checks run: {result['launcher_checks']})"
    assert expected_error(case, version) in result["error"], f"SGLang {version} said: {result['error']}"
    assert result["stage"] == case.expect_stage, f"SGLang {version} refused {case.id} at {result['stage']}"


@pytest.mark.parametrize(("version", "case"), _params(lambda v: [c for c in multinode_cases(v) if c.check]))
def test_every_node_of_a_two_node_pair_resolves_to_one_world(version, case, peer_results):
    """The rendered config of each node, with its --node-rank, resolves under SGLang's own resolver and launcher
    checks, to nnodes 2, its rank, rank 0's rendezvous and (where the version has it) the gated launch port."""
    result = peer_results[version]["results"][case.id]
    assert result["ok"], f"SGLang {version} rejected {case.id}: {result['error']}"
    case.check(result["resolved"], version)
    options = peer_results[version]["options"]
    assert not [k for k in case.config if f"--{k}" not in options]


@pytest.mark.parametrize(("version", "case"), _params(lambda v: [c for c in multinode_cases(v) if c.expect_error]))
def test_a_world_that_does_not_split_over_the_nodes_is_refused_by_sglangs_launcher(version, case, peer_results):
    result = peer_results[version]["results"][case.id]
    assert not result["ok"], f"SGLang {version} accepted {case.id}"
    assert expected_error(case, version) in result["error"], f"SGLang {version} said: {result['error']}"
    assert result["stage"] == case.expect_stage, f"SGLang {version} refused {case.id} at {result['stage']}"


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_every_launcher_check_runs_on_every_version(version, peer_results):
    """A shipped DFLASH rendering runs every launcher check, in the launcher's order: none is missing or renamed."""
    result = peer_results[version]["results"]["dflash-bs8+ct200-ep8"]
    assert result["ok"], result["error"]
    assert tuple(result["launcher_checks"]) == LAUNCHER_CHECKS_DFLASH


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_a_resolver_run_leaves_the_bytecode_of_what_it_imported_for_the_next(version, peer_results):
    """The venv is installed without compiling: each version's first run must cache what it imports, or every later
    run (and every CI run on a machine that keeps the venv) compiles SGLang, transformers and torch again."""
    package = require_resolver_venv() / "versions" / version / "sglang"
    for module in (package / "srt" / "server_args.py", package / "srt" / "configs" / "model_config.py"):
        assert Path(importlib.util.cache_from_source(str(module))).is_file(), f"no bytecode cached for {module}"


@pytest.mark.slow
def test_config_check_logic_reports_sglangs_rejection_end_to_end(model_dirs, tmp_path, monkeypatch):
    """What sglang_config_check runs on a host (driver written to a temp file, run by another Python)."""
    from ansible.module_utils.specgate.service.sglang_resolve import check_config

    venv = require_resolver_venv()
    config = tmp_path / "server.yaml"
    config.write_text(f"model-path: {model_dirs['target']}\nspeculative-algorithm: DFLASH\n"
                      f"speculative-draft-model-path: {model_dirs['drafter']}\npp-size: 2\n")
    use_resolver_env(monkeypatch, "0.5.23")
    result = check_config(str(venv / "bin" / "python"), str(config), extra_argv=["--device", "cuda"])
    assert result.rejected
    assert result.message == "ValueError: Currently DFLASH speculative decoding only supports pp_size == 1."


@pytest.mark.slow
def test_config_check_refuses_what_only_the_launcher_refuses_end_to_end(model_dirs, tmp_path, monkeypatch):
    """sglang_config_check's own code path (driver shipped to a temp file, another Python) on the issue's example,
    on the oldest supported version (the table above covers every version through the same driver)."""
    version = "0.5.11"
    from ansible.module_utils.specgate.service.sglang_flags import server_config
    from ansible.module_utils.specgate.service.sglang_resolve import check_config

    venv = require_resolver_venv()
    config = tmp_path / "server.yaml"
    rendered = server_config({"model_path": model_dirs["target"], "served_model_name": "kimi-k2.6:fp8"}, version)
    config.write_text(yaml.safe_dump(rendered))
    use_resolver_env(monkeypatch, version)
    result = check_config(str(venv / "bin" / "python"), str(config), extra_argv=["--device", "cuda"])
    assert result.rejected
    assert "served_model_name cannot contain a colon" in result.message
    assert result.stage == "launcher:check_server_args"
