"""specgate's alert rules, rendered by Ansible from the role's template with its defaults, checked by Prometheus's own
promtool (`check rules`) and tested with it (`test rules`): each alert fires on the series that describe its failure
and stays quiet on a healthy host beside it. promtool comes from the distribution's prometheus package
(scripts/bootstrap unpacks it into .venv/bin)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from integration.preflight_runner import PROJECT_ROOT, run_play

ROLE = PROJECT_ROOT / "roles" / "sglang_monitoring"


def promtool() -> str:
    beside = Path(sys.executable).parent / "promtool"
    found = str(beside) if beside.exists() else shutil.which("promtool")
    if found:
        return found
    reason = ("promtool is missing: run scripts/bootstrap (it unpacks promtool from the distribution's prometheus "
              "package)")
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rules file as the role renders it, with its defaults."""
    tmp = tmp_path_factory.mktemp("rules")
    dest = tmp / "specgate-rules.yml"
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{"ansible.builtin.template": {
        "src": str(ROLE / "templates" / "specgate-rules.yml.j2"), "dest": str(dest), "mode": "0644"}}]}]
    run = run_play(tmp, play, defaults)
    assert run.status == "successful", run.failed_tasks()
    return dest


def series(name: str, host: str, values: str, **labels: str) -> dict:
    job = "node" if name.startswith("specgate_") else "sglang"
    text = ",".join(f'{k}="{v}"' for k, v in {"host": host, "job": job, **labels}.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def sglang(host: str, tokens_per_min: int, verifies_per_min: int, requests_per_min: int = 10,
           aborted_per_min: int = 0) -> list[dict]:
    return [series("sglang:generation_tokens_total", host, f"0+{tokens_per_min}x60"),
            series("sglang:spec_verify_calls_total", host, f"0+{verifies_per_min}x60"),
            series("sglang:num_requests_total", host, f"0+{requests_per_min}x60"),
            series("sglang:num_aborted_requests_total", host, f"0+{aborted_per_min}x60")]


def released(host: str, release: str, *, known_good: bool = True, gate: float | None = None,
             algorithm: str = "DFLASH") -> list[dict]:
    out = [series("specgate_release_info", host, "1x60", release=release, profile=release, algorithm=algorithm,
                  block_size="8", known_good=str(known_good).lower())]
    if gate is not None:
        out.append(series("specgate_gate_accept_length", host, f"{gate}x60", release=release))
    return out


def expect(eval_time: str, alertname: str, *alerts: dict) -> dict:
    return {"eval_time": eval_time, "alertname": alertname, "exp_alerts": list(alerts)}


def run_cases(tmp_path: Path, rules: Path, input_series: list[dict], alert_tests: list[dict]) -> None:
    cases = tmp_path / "cases.yml"
    cases.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": input_series, "alert_rule_test": alert_tests}]}, sort_keys=False))
    done = subprocess.run([promtool(), "test", "rules", str(cases)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_accepts_the_rendered_rules(rules: Path) -> None:
    done = subprocess.run([promtool(), "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 7 rules found" in done.stdout, done.stdout


def test_speculation_falling_back_to_plain_decoding_fires_only_where_it_happens(tmp_path: Path, rules: Path) -> None:
    run_cases(tmp_path, rules,
              [*sglang("fallen", 100, 100), *released("fallen", "dflash-bs8-a"),        # 1 token per verify step
               *sglang("healthy", 400, 100), *released("healthy", "dflash-bs8-a"),      # 4 per step
               *sglang("no-spec", 100, 100), *released("no-spec", "plain-b", algorithm="none")],  # fine without one
              [expect("9m", "SpecgateSpeculationFallback"),  # not for the window yet
               expect("25m", "SpecgateSpeculationFallback", {
                   "exp_labels": {"severity": "critical", "host": "fallen"},
                   "exp_annotations": {
                       "summary": "fallen decodes without speculation",
                       "description": "Live acceptance on fallen is 1.00 tokens per verify step over 10m: SGLang "
                                      "is serving without its drafter. Roll back (playbooks/rollback.yml) or "
                                      "redeploy."}})])


def test_acceptance_drifting_below_the_gated_value_fires_beyond_the_allowed_drift(tmp_path: Path, rules: Path) -> None:
    run_cases(tmp_path, rules,
              [*sglang("drifted", 300, 100), *released("drifted", "dflash-bs8-a", gate=4.5),  # 3.0 < 4.5 - 0.5
               *sglang("within", 420, 100), *released("within", "dflash-bs8-a", gate=4.5)],   # 4.2 >= 4.0
              [expect("25m", "SpecgateAcceptanceDrift", {
                  "exp_labels": {"severity": "warning", "host": "drifted"},
                  "exp_annotations": {
                      "summary": "drifted accepts fewer draft tokens than its gate measured",
                      "description": "Live acceptance on drifted is 3.00, more than 0.5 below the gated value "
                                     "(sglang_monitoring_accept_drift): the traffic mix changed since the gate. "
                                     "Re-gate with today's prompts or sweep again."}})])


def test_a_release_nothing_proved_fires_once_it_served_longer_than_a_gate_takes(tmp_path: Path, rules: Path) -> None:
    run_cases(tmp_path, rules,
              [*released("unsettled", "dflash-bs16-c", known_good=False), *released("proved", "dflash-bs8-a")],
              [expect("20m", "SpecgateUnprovedRelease"),
               expect("40m", "SpecgateUnprovedRelease", {
                   "exp_labels": {"severity": "warning", "host": "unsettled", "release": "dflash-bs16-c"},
                   "exp_annotations": {
                       "summary": "unsettled serves dflash-bs16-c, which nothing proved",
                       "description": "The active release is not known-good after 30m "
                                      "(sglang_monitoring_unproved_for). Run deploy.yml to settle it (gate or "
                                      "restore), or playbooks/rollback.yml."}})])


def test_aborts_and_server_errors_fire_above_their_share_of_requests(tmp_path: Path, rules: Path) -> None:
    failing_5xx = series("sglang:http_responses_total", "failing", "0+2x60", endpoint="/generate",
                         status_code="503", method="POST")
    run_cases(tmp_path, rules,
              [*sglang("aborting", 400, 100, requests_per_min=100, aborted_per_min=10),  # 10 % aborted
               *sglang("failing", 400, 100, requests_per_min=100), failing_5xx,           # 2 % 5xx: under 5 %
               *sglang("healthy", 400, 100, requests_per_min=100, aborted_per_min=1)],    # 1 %
              [expect("25m", "SpecgateRequestErrors", {
                  "exp_labels": {"severity": "warning", "host": "aborting"},
                  "exp_annotations": {
                      "summary": "aborting aborts or fails 10% of its requests",
                      "description": "More than 0.05 of the requests on aborting were aborted or answered 5xx over "
                                     "10m (sglang_monitoring_max_error_ratio)."}})])


def test_an_engine_prometheus_cannot_scrape_fires_after_its_grace(tmp_path: Path, rules: Path) -> None:
    run_cases(tmp_path, rules,
              [{"series": 'up{job="sglang",host="down",instance="down:30000"}', "values": "0x30"},
               {"series": 'up{job="sglang",host="up",instance="up:30000"}', "values": "1x30"}],
              [expect("1m", "SpecgateEngineDown"),
               expect("5m", "SpecgateEngineDown", {
                   "exp_labels": {"severity": "critical", "host": "down", "instance": "down:30000", "job": "sglang"},
                   "exp_annotations": {
                       "summary": "The SGLang engine on down does not answer /metrics",
                       "description": "Prometheus has not scraped down:30000 for 2m. See `journalctl -u sglang` on "
                                      "the host."}})])


def engine_up(host: str, worker: str, values: str = "1x60") -> dict:
    return {"series": f'up{{job="sglang",host="{host}",worker="{worker}"}}', "values": values}


def test_a_replica_that_serves_outside_the_router_fires_after_a_rollouts_time(tmp_path: Path, rules: Path) -> None:
    """b answers but the router stopped reporting it healthy; a stays in. Quiet while a rollout may still hold b
    out, firing once it has been out longer than sglang_monitoring_out_of_router_for."""
    run_cases(tmp_path, rules,
              [engine_up("a", "http://a:30000"), engine_up("b", "http://b:30000"),
               {"series": 'up{job="sglang-router",host="lb"}', "values": "1x60"},
               {"series": 'smg_worker_health{job="sglang-router",host="lb",worker="http://a:30000"}', "values": "1x60"},
               {"series": 'smg_worker_health{job="sglang-router",host="lb",worker="http://b:30000"}',
                "values": "1x5 0x55"}],
              [expect("20m", "SpecgateReplicaOutOfRouter"),  # out for 15 minutes: a rollout may still be at it
               expect("40m", "SpecgateReplicaOutOfRouter", {
                   "exp_labels": {"severity": "warning", "host": "b", "worker": "http://b:30000"},
                   "exp_annotations": {
                       "summary": "b serves, but no router sends it requests",
                       "description": "The engine on b answers, yet no router has reported http://b:30000 healthy "
                                      "for 30m (sglang_monitoring_out_of_router_for): a rollout that stopped before "
                                      "it put the replica back. Run deploy.yml (it puts every replica back behind "
                                      "the router), or check the router's journal."}})])


def test_engines_with_no_router_scraped_never_fire_the_out_of_router_alert(tmp_path: Path, rules: Path) -> None:
    run_cases(tmp_path, rules, [engine_up("solo", "http://solo:30000")],
              [expect("59m", "SpecgateReplicaOutOfRouter")])


def test_promtool_accepts_the_configuration_the_role_generates_with_these_rules(tmp_path: Path, rules: Path) -> None:
    """The scrape configuration as the monitor's validate step makes it (the filter over a real inventory), checked
    by promtool together with the rules it loads, as the role's install step does."""
    dest = tmp_path / "specgate.yml"
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "sglang_monitoring", "tasks_from": "validate"}},
        {"ansible.builtin.copy": {"content": "{{ __sglang_monitoring_config | to_nice_yaml }}", "dest": str(dest),
                                  "mode": "0644"}}]}]
    # The one host of run_play's inventory as the replica, and as the router.
    run = run_play(tmp_path, play, {"sglang_monitoring_replica_group": "all", "sglang_monitoring_router_group": "all",
                                    "_sglang_monitoring_rules_file": str(rules)})
    assert run.status == "successful", run.failed_tasks()
    config = yaml.safe_load(dest.read_text())
    assert [job["job_name"] for job in config["scrape_configs"]] == ["sglang", "sglang-router", "node"]
    assert config["rule_files"] == [str(rules)]
    checked = subprocess.run([promtool(), "check", "config", str(dest)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 7 rules found" in checked.stdout, checked.stdout  # the rules it loads were read too
