"""The sim's server-args module answers specgate's config check as SGLang does (no SGLang needed here).

Same known-bad table as the peer tests against real SGLang, so the sim stays faithful to SGLang's messages.
"""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.service.sglang_flags import server_config
from resolver_cases import (
    KNOWN_BAD,
    PRESETS,
    PROFILES,
    Case,
    deployment_from_files,
    expected_error,
    launcher_refuses_cases,
    multinode_cases,
    resolve_in_process,
    write_case_files,
)

SIM_MODULE = "specgate_sim.server_args"
SIM_VERSION = "0.5.23"  # the sim speaks SGLang 0.5.23 with the DDTree pull request


def _resolve(cases, model_dirs, tmp_path):
    requests = write_case_files(cases, SIM_VERSION, model_dirs, tmp_path, stock=False)
    return resolve_in_process(SIM_MODULE, requests)


@pytest.mark.parametrize("case", [c for c in KNOWN_BAD if c.sim], ids=lambda c: c.id)
def test_sim_rejects_known_bad_configs_with_sglangs_message(case, model_dirs, tmp_path):
    result = _resolve([case], model_dirs, tmp_path)[case.id]
    assert not result["ok"], f"the sim accepted {case.id}"
    assert expected_error(case, SIM_VERSION) in result["error"]


@pytest.mark.parametrize("case", [c for c in launcher_refuses_cases(SIM_VERSION) if c.sim], ids=lambda c: c.id)
def test_sim_refuses_what_sglangs_launcher_refuses_that_a_demo_user_can_set(case, model_dirs, tmp_path):
    result = _resolve([case], model_dirs, tmp_path)[case.id]
    assert not result["ok"], f"the sim accepted {case.id}"
    assert expected_error(case, SIM_VERSION) in result["error"]


def test_the_sim_judges_a_launcher_case_or_two():
    assert len([c for c in launcher_refuses_cases(SIM_VERSION) if c.sim]) >= 2


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_sim_resolves_every_shipped_profile_on_the_ct200_preset(profile, model_dirs, tmp_path):
    preset = next(p for p in PRESETS if p.stem == "ct200-ep8")
    deployment = deployment_from_files(profile, preset)
    version = f"{SIM_VERSION}+ddtree" if deployment["algorithm"] == "DDTREE" else SIM_VERSION
    case = Case(profile.stem, server_config(deployment, version))
    result = _resolve([case], model_dirs, tmp_path)[case.id]
    assert result["ok"], result["error"]
    resolved = result["resolved"]
    assert resolved["tp_size"] == 8
    if deployment["algorithm"] == "DDTREE":
        # PR #29907: the verify width is budget + 1
        assert resolved["speculative_num_draft_tokens"] == deployment["ddtree_budget"] + 1


def test_sim_refuses_trtllm_mla_like_sglang_on_a_host_that_is_not_blackwell(model_dirs, tmp_path):
    preset = next(p for p in PRESETS if p.stem == "b300-tp8")
    profile = next(p for p in PROFILES if p.stem == "dflash-bs8")
    case = Case("b300", server_config(deployment_from_files(profile, preset), SIM_VERSION))
    result = _resolve([case], model_dirs, tmp_path)[case.id]
    assert "TRTLLM MLA backend is only supported on Blackwell GPUs" in result["error"]


def test_sim_server_args_exposes_the_exact_option_strings_of_its_parser():
    import specgate_sim.server_args as module
    from ansible.module_utils.specgate.service import resolver_driver

    options = resolver_driver.option_strings(module)
    assert "--speculative-dflash-block-size" in options
    assert "--speculative-ddtree-budget" in options
    assert "--speculative-dflash-block" not in options


def test_sim_resolves_each_node_of_a_two_node_pair_as_sglang_does(model_dirs, tmp_path):
    """The same per-node renderings the peer test gives SGLang 0.5.23: same world, same rank, same rendezvous."""
    cases = multinode_cases(SIM_VERSION)
    results = _resolve(cases, model_dirs, tmp_path)
    for case in cases:
        result = results[case.id]
        if case.check is not None:
            assert result["ok"], f"{case.id}: {result['error']}"
            case.check(result["resolved"], SIM_VERSION)
        else:
            assert not result["ok"], f"the sim accepted {case.id}"
            assert expected_error(case, SIM_VERSION) in result["error"]
