"""Start-up, shutdown, API keys and every fault switch, each against its own sim process."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from specgate_sim import testing


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG, weight_bytes=9 << 20)


@pytest.fixture
def drafter(tmp_path: Path) -> Path:
    return testing.write_model_dir(tmp_path / "drafter", testing.drafter_config(8), weight_bytes=1 << 20)


def _start(tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> testing.SimProcess:
    return testing.start(args, log_path=tmp_path / "sim.log", env={"SPECGATE_SIM_START_SECONDS": "0", **(env or {})})


def _observe(sim: testing.SimProcess, path: str, seconds: float) -> list[int | None]:
    """Distinct consecutive statuses of ``path`` over ``seconds``."""
    seen: list[int | None] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = sim.status(path)
        if not seen or seen[-1] != status:
            seen.append(status)
        if status == 200:
            break
        time.sleep(0.01)
    return seen


def test_port_closed_then_503_while_loading_then_200(tmp_path: Path, target: Path) -> None:
    # 0.4 s of process start, then ~0.8 s of load (800 simulated seconds at scale 0.001)
    sim = _start(
        tmp_path,
        ["--model-path", str(target)],
        {"SPECGATE_SIM_START_SECONDS": "400", "SPECGATE_SIM_LOAD_SECONDS": "800"},
    )
    try:
        assert _observe(sim, "/health", 10) == [None, 503, 200]
        assert "The server is fired up and ready to roll!" in sim.log()
    finally:
        assert sim.stop() == 0


def test_bind_after_load_keeps_the_port_closed_through_the_load_as_sglang_does(tmp_path: Path, target: Path) -> None:
    sim = _start(
        tmp_path,
        ["--model-path", str(target)],
        {"SPECGATE_SIM_BIND_AFTER_LOAD": "1", "SPECGATE_SIM_LOAD_SECONDS": "800", "SPECGATE_SIM_WARMUP_SECONDS": "400"},
    )
    try:
        started = time.monotonic()
        sim.wait_status("/health", 503)
        assert time.monotonic() - started >= 0.75  # nothing listened during the 0.8 s load
        assert _observe(sim, "/health", 10) == [503, 200]
    finally:
        sim.stop()


def test_v1_models_answers_while_health_is_still_503(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)], {"SPECGATE_SIM_LOAD_SECONDS": "100000"})
    try:
        sim.wait_status("/health", 503)
        assert sim.status("/v1/models") == 200
        assert sim.status("/ready") == 503
        assert sim.status("/server_info") == 503
        assert httpx.post(sim.url + "/generate", json={"text": "hi"}).status_code == 503
    finally:
        sim.stop()


def test_load_time_follows_weight_bytes_over_bandwidth(tmp_path: Path, target: Path, drafter: Path) -> None:
    # 10 MiB of apparent weight bytes (target + drafter) at 1 MiB/s: 10 simulated seconds
    sim = _start(
        tmp_path,
        [
            "--model-path",
            str(target),
            "--speculative-algorithm",
            "DFLASH",
            "--speculative-draft-model-path",
            str(drafter),
        ],
        {"SPECGATE_SIM_LOAD_BANDWIDTH": str(1 << 20), "SPECGATE_SIM_FAULT_SLOW_LOAD_SECONDS": "5"},
    )
    try:
        sim.wait_ready()
        match = re.search(r"bytes=(\d+) \(simulated ([\d.]+) s\)", sim.log())
        assert match is not None
        assert int(match.group(1)) == 10 << 20
        assert float(match.group(2)) == pytest.approx(15.0)  # 10 s of bytes + 5 s of FAULT_SLOW_LOAD
    finally:
        sim.stop()


def test_sigterm_turns_health_503_and_exits_zero(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)])
    sim.wait_ready()
    sim.proc.send_signal(signal.SIGTERM)
    assert sim.proc.wait(10) == 0
    assert sim.status("/health") is None


def test_missing_target_config_refuses_to_start(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    sim = _start(tmp_path, ["--model-path", str(empty)])
    assert sim.proc.wait(10) == 1
    assert "does not appear to have a file named config.json" in sim.log()
    assert sim.status("/health") is None


def test_missing_drafter_config_refuses_to_start(tmp_path: Path, target: Path) -> None:
    sim = _start(
        tmp_path,
        ["--model-path", str(target), "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "/nope"],
    )
    assert sim.proc.wait(10) == 1
    assert "/nope does not appear to have a file named config.json" in sim.log()


def test_unknown_flag_fails_like_argparse(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target), "--no-such-flag", "1"])
    assert sim.proc.wait(10) == 2
    assert "sglang serve: error: unrecognized arguments: --no-such-flag 1" in sim.log()


def test_reject_flag_fault_makes_a_known_flag_unrecognized(tmp_path: Path, target: Path) -> None:
    sim = _start(
        tmp_path,
        ["--model-path", str(target), "--speculative-draft-window-size", "2048"],
        {"SPECGATE_SIM_REJECT_FLAG": "--speculative-draft-window-size"},
    )
    assert sim.proc.wait(10) == 2
    assert "unrecognized arguments: --speculative-draft-window-size 2048" in sim.log()


def test_config_yaml_sets_flags_with_dashed_keys(tmp_path: Path, target: Path, drafter: Path) -> None:
    config = tmp_path / "server.yaml"
    config.write_text(
        f"model-path: {target}\nserved-model-name: from-yaml\nspeculative-algorithm: DFLASH\n"
        f"speculative-draft-model-path: {drafter}\nspeculative-draft-window-size: 2048\nenable-metrics: true\n"
    )
    sim = _start(tmp_path, ["--config", str(config)])
    try:
        sim.wait_ready()
        info = httpx.get(sim.url + "/server_info").json()
        assert (info["served_model_name"], info["speculative_draft_window_size"]) == ("from-yaml", 2048)
        assert info["enable_metrics"] is True
        assert sim.status("/metrics") == 200
    finally:
        sim.stop()


def test_api_key_guards_all_but_health_ready_and_metrics(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target), "--api-key", "sk-test", "--enable-metrics"])
    try:
        sim.wait_ready()
        for path in ("/health", "/health_generate", "/ready", "/metrics"):
            assert sim.status(path) == 200, path
        denied = httpx.get(sim.url + "/v1/models")
        assert denied.status_code == 401
        assert denied.json() == {"error": "Unauthorized"}
        assert httpx.get(sim.url + "/server_info", headers={"Authorization": "Bearer wrong"}).status_code == 401
        ok = httpx.get(sim.url + "/server_info", headers={"Authorization": "Bearer sk-test"})
        assert ok.status_code == 200
        assert httpx.post(sim.url + "/flush_cache", headers={"Authorization": "Bearer sk-test"}).status_code == 200
    finally:
        sim.stop()


def test_admin_key_alone_guards_flush_cache_only(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target), "--admin-api-key", "adm"])
    try:
        sim.wait_ready()
        assert httpx.get(sim.url + "/server_info").status_code == 200
        assert httpx.post(sim.url + "/flush_cache").status_code == 401
        assert httpx.post(sim.url + "/flush_cache", headers={"Authorization": "Bearer adm"}).status_code == 200
    finally:
        sim.stop()


def test_metrics_endpoint_exists_only_with_enable_metrics(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)])
    try:
        sim.wait_ready()
        assert sim.status("/metrics") == 404
    finally:
        sim.stop()


def test_fault_crash_during_load_exits_1_with_a_traceback_tail(tmp_path: Path, target: Path) -> None:
    sim = _start(
        tmp_path,
        ["--model-path", str(target)],
        {"SPECGATE_SIM_LOAD_SECONDS": "600", "SPECGATE_SIM_FAULT_CRASH_DURING_LOAD": "1"},
    )
    sim.wait_status("/health", 503)
    assert sim.proc.wait(10) == 1
    log = sim.log()
    assert "Traceback (most recent call last)" in log
    assert "Received sigquit from a child process" in log
    assert "fired up" not in log


def test_fault_never_healthy_keeps_health_503(tmp_path: Path, target: Path) -> None:
    sim = _start(
        tmp_path,
        ["--model-path", str(target)],
        {"SPECGATE_SIM_LOAD_SECONDS": "10", "SPECGATE_SIM_FAULT_NEVER_HEALTHY": "1"},
    )
    try:
        sim.wait_status("/health", 503)
        assert set(_observe(sim, "/health", 0.6)) == {503}  # 600 simulated seconds, far past the 10 s load
        assert sim.status("/v1/models") == 200
    finally:
        assert sim.stop() == 0


def test_fault_refuse_connections_keeps_the_port_closed_first(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)], {"SPECGATE_SIM_FAULT_REFUSE_SECONDS": "500"})
    try:
        started = time.monotonic()
        sim.wait_ready()
        assert time.monotonic() - started >= 0.45
        assert "fired up" in sim.log()
    finally:
        sim.stop()


def test_fault_ignore_sigterm_keeps_answering_for_a_while(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)], {"SPECGATE_SIM_FAULT_IGNORE_SIGTERM_SECONDS": "800"})
    sim.wait_ready()
    sim.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert sim.proc.poll() is None
    assert sim.status("/health") == 200  # the old process still answers, as in the field notes
    assert sim.status("/v1/models") == 200
    assert sim.proc.wait(10) == 0


def test_fault_lowered_acceptance_lowers_accept_length(tmp_path: Path, target: Path, drafter: Path) -> None:
    args = ["--model-path", str(target), "--speculative-algorithm", "DFLASH", "--speculative-draft-model-path"]
    body = {
        "text": "Write a Python function to parse json",
        "sampling_params": {"max_new_tokens": 400, "ignore_eos": True},
    }
    lengths = {}
    for multiplier in ("1.0", "0.6"):
        sim = _start(tmp_path, [*args, str(drafter)], {"SPECGATE_SIM_ACCEPT_MULTIPLIER": multiplier})
        try:
            sim.wait_ready()
            lengths[multiplier] = httpx.post(sim.url + "/generate", json=body).json()["meta_info"]["spec_accept_length"]
        finally:
            sim.stop()
    assert lengths["0.6"] < lengths["1.0"] - 1.0


def test_module_runs_as_python_dash_m(tmp_path: Path) -> None:
    # the systemd unit runs `<venv>/bin/python -m specgate_sim.launch_server`: the module must be importable
    out = subprocess.run(
        [sys.executable, "-m", "specgate_sim.launch_server", "--help"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": testing.PACKAGE_PARENT},
        check=False,
    )
    assert out.returncode == 0
    assert "--speculative-ddtree-budget" in out.stdout


def test_unknown_profile_refuses_to_start(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)], {"SPECGATE_SIM_PROFILE": "h900"})
    assert sim.proc.wait(10) == 1
    assert "SPECGATE_SIM_PROFILE must be one of ['b300', 'ct200']" in sim.log()


def test_startup_logs_server_args_on_sglangs_engine_logger(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target), "--api-key", "sk-logged"])
    try:
        sim.wait_ready()
        assert "server_args=" in sim.log()
        assert "sk-logged" in sim.log()  # SGLang 0.5.23 logs the key too: why the service role silences it
    finally:
        sim.stop()


def test_logging_config_path_replaces_the_default_setup_as_sglang_does(tmp_path: Path, target: Path) -> None:
    config = tmp_path / "logging.json"
    config.write_text(
        '{"version": 1, "disable_existing_loggers": false,'
        ' "handlers": {"out": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout"}},'
        ' "root": {"level": "INFO", "handlers": ["out"]},'
        ' "loggers": {"sglang.srt.entrypoints.engine": {"level": "WARNING"}}}'
    )
    sim = _start(
        tmp_path, ["--model-path", str(target), "--api-key", "sk-hidden"], {"SGLANG_LOGGING_CONFIG_PATH": str(config)}
    )
    try:
        sim.wait_ready()
        assert "The server is fired up and ready to roll!" in sim.log()
        assert "sk-hidden" not in sim.log()
    finally:
        sim.stop()


def test_missing_logging_config_path_refuses_to_start(tmp_path: Path, target: Path) -> None:
    sim = _start(tmp_path, ["--model-path", str(target)], {"SGLANG_LOGGING_CONFIG_PATH": str(tmp_path / "nope.json")})
    assert sim.proc.wait(15) != 0
    assert "but it does not exist!" in sim.log()
