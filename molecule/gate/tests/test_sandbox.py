"""The coding eval's sandbox on a real systemd host: model-written code that tries to escape cannot write outside its
temp dir, open a socket (even to the sim on the host's loopback), or read the API key, while honest code is judged
as before. The same attack run the old ways (as root, as the service user) does escape: the test can fail."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import ansible_runner
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
BASE = "/opt/specgate"
PYTHON = f"{BASE}/venv/bin/python"
PORT = 32000  # the sim the converge deployed, on the loopback the container shares with this machine
KEY = "sk-gate-molecule-4e1d7b93a06c"
ESCAPES = {
    "etc": "/etc/specgate-escaped",
    "opt": f"{BASE}/escaped",
    "cache": "/var/cache/specgate/escaped",
    "root": "/root/escaped",
    "shm": "/dev/shm/specgate-escaped",
}

ATTACK = """\
import errno, json, os, socket

def attack(key_file, port, escapes):
    def why(e):
        return errno.errorcode.get(e.errno or 0, type(e).__name__)
    out = {"uid": os.getuid()}
    for name, path in list(escapes.items()) + [("tmp", "inside.txt")]:
        try:
            with open(path, "w") as f:
                f.write("escaped")
            out["write_" + name] = "written"
        except OSError as e:
            out["write_" + name] = why(e)
    try:
        with open(key_file) as f:
            out["key"] = "read " + f.read()
    except OSError as e:
        out["key"] = why(e)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        out["tcp"] = "connected"
    except OSError as e:
        out["tcp"] = why(e)
    try:
        socket.socket(socket.AF_UNIX).close()
        out["unix"] = "opened"
    except OSError as e:
        out["unix"] = why(e)
    out["pids_seen"] = sum(1 for d in os.listdir("/proc") if d.isdigit())
    return out
"""

HONEST_GCD = "def gcd(a, b):\n    a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n    return a\n"
WRONG_FIB = "def fib(n):\n    return n\n"


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


@pytest.fixture(scope="module")
def key_file(host) -> str:
    path = f"{host.file(f'{BASE}/active').linked_to}/launch.yaml"
    assert KEY in host.file(path).content_string, f"{path} should hold the API key"
    return path


def answer(code: str) -> dict:
    return {"answer": f"Here it is:\n```python\n{code}```\n", "finish_reason": "stop"}


def spec_code_eval(tmp_path: Path, answers: list[dict]) -> dict:
    """spec_code_eval on the host, as root (bench.yml's block becomes root), over one run of pending answers."""
    run = {"run": 1, "cells": [], "sets": {}, "eval": {"pending": True, "answers": answers}}
    bench = {"schema": "specgate.bench/v1", "server": {}, "runs": [run]}
    args = {"bench": bench, "python": PYTHON, "timeout_s": 5, "inaccessible_paths": [f"{BASE}/releases"]}
    runner = ansible_runner.run(
        private_data_dir=str(tmp_path),
        host_pattern="all",
        module="spec_code_eval",
        module_args=json.dumps(args),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        cmdline="--become",  # the scenario logs in as an ordinary user
        quiet=True,
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )
    results = [e["event_data"]["res"] for e in runner.events if e["event"] in ("runner_on_ok", "runner_on_failed")]
    assert runner.status == "successful", results
    (res,) = results
    return res


@pytest.fixture(scope="module")
def judged(host, key_file, tmp_path_factory) -> dict:
    attack = ATTACK + f"raise RuntimeError('ATTACK' + json.dumps(attack({key_file!r}, {PORT}, {ESCAPES!r})))\n"
    answers = [
        {"name": "gcd", **answer(HONEST_GCD)},
        {"name": "fib", **answer(WRONG_FIB)},
        {"name": "is_palindrome", **answer(attack)},
    ]
    return spec_code_eval(tmp_path_factory.mktemp("sandbox"), answers)


def attack_report(judged: dict) -> dict:
    (result,) = [r for r in judged["result"]["runs"][0]["eval"]["results"] if r["name"] == "is_palindrome"]
    assert result["outcome"] == "error", result
    return json.loads(result["detail"].split("ATTACK", 1)[1])


def test_honest_code_is_judged_as_before(judged):
    ev = judged["result"]["runs"][0]["eval"]
    outcomes = {r["name"]: r["outcome"] for r in ev["results"]}
    assert outcomes == {"gcd": "passed", "fib": "failed", "is_palindrome": "error"}, ev["results"]
    assert (ev["problems"], ev["passed"]) == (3, 1)


def test_the_probe_ran_first_as_a_throwaway_user_without_network(judged):
    probe = judged["sandbox"]["probe"]
    assert 61184 <= probe["uid"] <= 65519, probe  # systemd's range for dynamic users
    assert (probe["socket"], probe["loopback"]) == ("EPERM", "EPERM"), probe
    assert (probe["write_root"], probe["write_tmp"]) == ("EROFS", "written"), probe
    assert probe["read"][f"{BASE}/releases"] == "EACCES", probe
    assert "DynamicUser=yes" in judged["sandbox"]["properties"]


def test_generated_code_cannot_write_outside_its_temp_dir(host, judged):
    report = attack_report(judged)
    for name, path in ESCAPES.items():
        assert report[f"write_{name}"] != "written", report
        assert not host.file(path).exists, f"{path} was written from the sandbox"
    assert report["write_tmp"] == "written", report


def test_generated_code_cannot_open_a_socket_even_to_the_server_on_loopback(host, judged):
    report = attack_report(judged)
    assert report["tcp"] == "EPERM", report
    assert report["unix"] == "EPERM", report
    assert host.socket(f"tcp://127.0.0.1:{PORT}").is_listening  # there was a server to reach


def test_generated_code_cannot_read_the_api_key_nor_see_the_server_process(judged):
    report = attack_report(judged)
    assert report["key"] in ("EACCES", "ENOENT"), report
    assert KEY not in json.dumps(judged)
    assert report["pids_seen"] <= 2, report  # itself only: the server's command line is hidden
    assert report["uid"] != 0


def test_the_sandbox_leaves_nothing_behind(host, judged):
    assert judged["result"]["runs"][0]["eval"]["problems"] == 3
    units = host.run("systemctl list-units --all --no-legend 'specgate-eval-*'")
    assert (units.rc, units.stdout.strip()) == (0, ""), units.stdout
    assert host.run("ls -A /run/systemd/dynamic-uid").stdout.strip() == ""  # every dynamic user released
    assert host.run("ls -d /tmp/specgate-eval-* /tmp/specgate-probe-* 2>/dev/null").stdout.strip() == ""


@pytest.mark.parametrize(
    ("who", "leaks"), [("root", {"write_etc", "key", "tcp"}), ("sglang", {"write_cache", "key", "tcp"})]
)
def test_the_same_attack_escapes_when_run_the_old_way(host, key_file, who, leaks):
    """Control: as root (the connection user on the test bed) or as the service user (the benchmark's user) the
    attack does write, read the key and connect, so the sandboxed results above are the sandbox's doing."""
    script = ATTACK + f"print('ATTACK' + json.dumps(attack({key_file!r}, {PORT}, {ESCAPES!r})))\n"
    host.run("install -d -m 0777 /tmp/specgate-attack")
    try:
        run = host.run(f"cd /tmp/specgate-attack && runuser -u {who} -- {PYTHON} -I -S -c {shlex.quote(script)}")
        assert run.rc == 0, run.stderr
        report = json.loads(run.stdout.split("ATTACK", 1)[1])
        got = {k for k, v in report.items() if isinstance(v, str) and v.startswith(("written", "connected", "read "))}
        assert leaks <= got, report
        assert KEY in report["key"]
    finally:
        host.run("rm -rf /tmp/specgate-attack " + " ".join(ESCAPES.values()))
