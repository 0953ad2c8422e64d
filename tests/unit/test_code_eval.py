"""The coding eval: extraction from answers, the sandbox's command line and probe, the harness, and the problem
set against known answers.

systemd-run needs systemd as PID 1, which this test machine lacks: the harness runs here under
tests/sandbox_double/systemd-run, a stand-in that isolates by other means (namespaces, user nobody) so the same
probe passes for real. The real sandbox is proven on a systemd host by molecule/gate/tests/test_sandbox.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from ansible.module_utils.specgate.gate import code_eval, sandbox
from ansible.module_utils.specgate.gate.code_eval import extract_code, judge, summarize
from ansible.module_utils.specgate.gate.coding_problems import PROBLEMS, PROBLEMS_BY_NAME, select_problems
from ansible.module_utils.specgate.gate.sandbox import Limits, Sandbox, SandboxError, interpreter_behind, run_asserts
from specgate_sim import codebank

pytestmark = pytest.mark.host

DOUBLE = str(Path(__file__).resolve().parents[1] / "sandbox_double" / "systemd-run")
# The code runs as an unprivileged user: the system's Python, not one under a home it cannot enter (pyenv's).
PYTHON = "/usr/bin/python3"
FAST = Sandbox(python=PYTHON, limits=Limits(timeout_s=5.0), systemd_run=DOUBLE)


def test_eval_has_at_least_twenty_problems_including_the_field_notes_five():
    names = [p.name for p in PROBLEMS]
    assert len(names) >= 20
    assert len(set(names)) == len(names)
    assert names[:5] == ["is_palindrome", "fib", "merge_sorted", "word_count", "gcd"]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_every_prompt_names_its_function_in_backticks_and_asks_for_a_python_block(problem):
    assert f"`{problem.name}(" in problem.prompt
    assert "```python" in problem.prompt
    assert len(problem.asserts) >= 2


def test_extract_picks_the_fenced_block_that_defines_the_function():
    answer = (
        "Here is a helper:\n```python\ndef helper():\n    pass\n```\nAnd the answer:\n"
        "```python\ndef gcd(a, b):\n    return a\n```\n"
    )
    got = extract_code(answer, "gcd")
    assert got.code == "def gcd(a, b):\n    return a"
    assert got.closed


def test_extract_drops_reasoning_before_the_code():
    answer = "<think>maybe ```python\ndef gcd(a, b): wrong\n```</think>```python\ndef gcd(a, b):\n    return 1\n```"
    assert extract_code(answer, "gcd").code == "def gcd(a, b):\n    return 1"


def test_extract_takes_an_unclosed_fence_as_far_as_it_goes_and_marks_it_open():
    got = extract_code("```python\ndef fib(n):\n    a, b = 0, 1\n", "fib")
    assert got.code == "def fib(n):\n    a, b = 0, 1"
    assert not got.closed


def test_extract_accepts_bare_code_with_its_imports():
    answer = "Sure.\nimport math\ndef lcm(a, b):\n    return abs(a * b) // math.gcd(a, b)\n"
    assert extract_code(answer, "lcm").code.startswith("import math\ndef lcm(")


def test_extract_reports_no_code_when_the_function_is_absent():
    assert extract_code("I cannot help with that.", "gcd").code is None


def test_sandbox_passes_correct_code_and_names_the_failing_assert():
    assert run_asserts("def gcd(a, b):\n    return 6", ["gcd(12, 18) == 6"], FAST)[0] == sandbox.PASSED
    outcome, detail = run_asserts("def gcd(a, b):\n    return 1", ["gcd(12, 18) == 6"], FAST)
    assert outcome == sandbox.FAILED
    assert "gcd(12, 18) == 6" in detail


def test_sandbox_reports_exceptions_and_syntax_errors():
    assert run_asserts("def f(:\n", ["f()"], FAST)[0] == sandbox.SYNTAX_ERROR
    assert run_asserts("def f():\n    return 1 / 0", ["f() == 1"], FAST)[0] == sandbox.ERROR


def test_sandbox_kills_an_endless_loop_at_the_timeout():
    started = time.monotonic()
    one_second = Sandbox(python=PYTHON, limits=Limits(timeout_s=1.0), systemd_run=DOUBLE)
    outcome, _ = run_asserts("def f():\n    while True:\n        pass", ["f()"], one_second)
    assert outcome == sandbox.TIMEOUT
    assert time.monotonic() - started < 5


def test_sandbox_caps_memory():
    outcome, _ = run_asserts("def f():\n    return len(bytearray(4 * 1024**3))", ["f() > 0"], FAST)
    assert outcome == sandbox.ERROR


def test_sandbox_does_not_run_in_this_process_nor_see_its_environment(monkeypatch):
    monkeypatch.setenv("SPECGATE_SECRET_FOR_TEST", "visible")
    code = "import os\ndef f():\n    return os.environ.get('SPECGATE_SECRET_FOR_TEST')"
    assert run_asserts(code, ["f() is None"], FAST)[0] == sandbox.PASSED
    assert "f" not in globals()


def test_a_truncated_answer_is_told_apart_from_wrong_code():
    problem = PROBLEMS_BY_NAME["merge_sorted"]
    answer = "```python\ndef merge_sorted(a, b):\n    result = []\n    while (i < len(a"
    assert judge(problem, answer, "length", FAST)["outcome"] == code_eval.TRUNCATED


def test_a_truncated_answer_whose_code_is_complete_still_counts():
    problem = PROBLEMS_BY_NAME["gcd"]
    answer = (
        "```python\ndef gcd(a, b):\n    a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n    return a\n"
    )
    assert judge(problem, answer, "length", FAST)["outcome"] == sandbox.PASSED


def test_summary_counts_outcomes_and_pass_rate():
    s = summarize([{"outcome": "passed"}, {"outcome": "failed"}, {"outcome": "passed"}, {"outcome": "timeout"}])
    assert s["passed"] == 2
    assert s["pass_rate"] == 0.5
    assert s["outcomes"] == {"passed": 2, "failed": 1, "timeout": 1}


def test_selecting_an_unknown_problem_names_the_variable():
    with pytest.raises(ValueError, match=r"spec_gate_bench_eval_problems.*nope"):
        select_problems(["gcd", "nope"])


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_asserts_accept_the_sims_correct_answer_and_reject_its_wrong_one(problem):
    """The sim's bank holds a correct and a subtly wrong answer per problem: the asserts must tell them apart."""
    entry = codebank.BANK[problem.name]
    assert run_asserts(entry.correct, problem.asserts, FAST)[0] == sandbox.PASSED
    assert run_asserts(entry.wrong, problem.asserts, FAST)[0] != sandbox.PASSED


# The sandbox's command line: every isolation property the issue asks for, the limits, the hidden paths.

REQUIRED = (
    "DynamicUser=yes",
    "PrivateNetwork=yes",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "NoNewPrivileges=yes",
    "SystemCallFilter=~@network-io",
    "ProtectProc=invisible",
    "CapabilityBoundingSet=",
)


def test_the_unit_runs_the_python_isolated_after_every_property_and_waits_piped_and_collected():
    box = Sandbox(python="/opt/specgate/venv/bin/python", inaccessible=("/opt/specgate/releases",))
    argv = sandbox.sandbox_argv(box, "specgate-eval-abc", ["-c", "print(1)"])
    assert argv[0] == "systemd-run"
    split = argv.index("--")
    options, command = argv[1:split], argv[split + 1 :]
    assert command == ["/opt/specgate/venv/bin/python", "-I", "-S", "-c", "print(1)"]
    for flag in ("--wait", "--pipe", "--collect", "--quiet", "--unit=specgate-eval-abc", "--working-directory=/tmp"):
        assert flag in options
    props = [o.removeprefix("--property=") for o in options if o.startswith("--property=")]
    for prop in REQUIRED:
        assert prop in props
    assert "InaccessiblePaths=-/opt/specgate/releases" in props
    assert "InaccessiblePaths=-/dev/shm" in props
    assert not [o for o in options if o.startswith("--uid") or o.startswith("--setenv=PATH")]


def test_the_unit_carries_wall_clock_cpu_memory_task_and_file_limits():
    props = Sandbox(
        python="/usr/bin/python3", limits=Limits(timeout_s=2.5, memory_bytes=256 << 20, tasks=8)
    ).properties()
    for prop in (
        "RuntimeMaxSec=2.5",
        "LimitCPU=3",
        f"MemoryMax={256 << 20}",
        f"LimitAS={256 << 20}",
        "TasksMax=8",
        f"LimitFSIZE={4 << 20}",
        "LimitNOFILE=64",
        "LimitCORE=0",
        "MemorySwapMax=0",
    ):
        assert prop in props


def test_each_unit_gets_its_own_name():
    assert sandbox.unit_name() != sandbox.unit_name()
    assert sandbox.unit_name().startswith("specgate-eval-")


def test_a_relative_python_is_refused():
    with pytest.raises(SandboxError, match="absolute"):
        sandbox.sandbox_argv(Sandbox(python="python3"), "u", [])


@pytest.mark.parametrize(
    ("returncode", "output", "expected"),
    [
        (
            1,
            "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
            "Failed to connect to bus: Host is down\n",
            "cannot reach the system manager",
        ),
        (
            1,
            "Failed to start transient service unit: Failed to set unit properties: Invalid argument\n",
            "refused the sandbox unit: Failed to start transient service unit",
        ),
        (226, "", "226/NAMESPACE (in a container, systemd needs CAP_SYS_ADMIN"),
        (217, "", "217/USER"),
    ],
)
def test_a_launch_failure_is_named(returncode, output, expected):
    assert expected in sandbox.launch_failure(returncode, output)


def test_the_codes_own_exit_is_no_launch_failure():
    assert sandbox.launch_failure(0, "") is None
    assert sandbox.launch_failure(1, "Traceback ...\nValueError: x\n") is None


CLEAN = {
    "uid": 61234,
    "gid": 61234,
    "socket": "EPERM",
    "loopback": "EPERM",
    "write_root": "EROFS",
    "write_tmp": "written",
    "host_tmp_visible": False,
    "read": {"/opt/specgate/releases": "EACCES"},
}


def test_a_probe_that_found_everything_shut_has_no_problems():
    assert sandbox.probe_problems(CLEAN, ["/opt/specgate/releases"]) == []


@pytest.mark.parametrize(
    ("leak", "named"),
    [
        ({"uid": 0}, "ran as root"),
        ({"socket": "opened", "loopback": "ECONNREFUSED"}, "open a socket"),
        ({"socket": "opened", "loopback": "connected"}, "reached a listener on the host's loopback"),
        ({"write_root": "written"}, "write to /"),
        ({"host_tmp_visible": True}, "host's /tmp"),
        ({"read": {"/opt/specgate/releases": "read"}}, "could read /opt/specgate/releases"),
        ({"write_tmp": "EROFS"}, "could not write its own temp dir"),
    ],
)
def test_each_leak_the_probe_finds_is_named(leak, named):
    problems = sandbox.probe_problems({**CLEAN, **leak}, ["/opt/specgate/releases"])
    assert any(named in problem for problem in problems), problems


# The probe and the harness through the stand-in launcher.


def test_the_probe_passes_under_a_launcher_that_isolates(tmp_path):
    secret = tmp_path / "launch.yaml"
    secret.write_text("api-key: sk-probe\n", encoding="utf-8")
    report = sandbox.check_sandbox(Sandbox(python=PYTHON, inaccessible=(str(secret),), systemd_run=DOUBLE))
    assert report["uid"] != 0
    assert report["read"][str(secret)] != "read"


def test_a_host_without_systemd_run_fails_naming_it():
    with pytest.raises(SandboxError, match=r"systemd-run-missing is not installed.*spec_gate_bench_eval: false"):
        sandbox.check_sandbox(Sandbox(python=PYTHON, systemd_run="systemd-run-missing"))


@pytest.mark.parametrize(
    ("mode", "named"),
    [
        ("no-bus", "cannot reach the system manager"),
        ("namespace", "226/NAMESPACE"),
        ("plain", "ran as root"),
    ],
)
def test_a_sandbox_that_does_not_work_or_does_not_hold_fails_before_any_code_runs(monkeypatch, tmp_path, mode, named):
    monkeypatch.setenv("SPECGATE_FAKE_SYSTEMD_RUN", mode)
    ran = tmp_path / "ran"
    code = f"open({str(ran)!r}, 'w').close()\ndef gcd(a, b):\n    return 6"
    bench = {
        "runs": [
            {
                "run": 1,
                "eval": code_eval.pending(
                    [{"name": "gcd", "answer": f"```python\n{code}\n```", "finish_reason": "stop"}]
                ),
            }
        ]
    }
    with pytest.raises(SandboxError, match=named):
        code_eval.judge_runs(bench, FAST)
    assert not ran.exists()


def test_plain_execution_is_caught_for_each_thing_it_leaks(monkeypatch):
    monkeypatch.setenv("SPECGATE_FAKE_SYSTEMD_RUN", "plain")
    with pytest.raises(SandboxError) as err:
        sandbox.check_sandbox(FAST)
    for named in ("ran as root", "open a socket", "reached a listener", "host's /tmp"):
        assert named in str(err.value)


def test_a_unit_that_systemd_cannot_start_fails_the_eval_instead_of_counting_against_the_model(monkeypatch):
    monkeypatch.setenv("SPECGATE_FAKE_SYSTEMD_RUN", "namespace")
    with pytest.raises(SandboxError, match="226/NAMESPACE"):
        run_asserts("def gcd(a, b):\n    return 6", ["gcd(12, 18) == 6"], FAST)


def test_generated_code_cannot_write_outside_its_temp_dir_nor_open_a_socket(tmp_path):
    outside = tmp_path / "escaped"
    code = (
        "import socket\n"
        "def attempt():\n"
        "    got = []\n"
        f"    for path in ({str(outside)!r}, '/escaped', 'inside.txt'):\n"
        "        try:\n"
        "            open(path, 'w').close()\n"
        "            got.append('wrote ' + path)\n"
        "        except OSError as e:\n"
        "            got.append('refused ' + path)\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
        "        got.append('connected')\n"
        "    except OSError:\n"
        "        got.append('no connection')\n"
        "    return got\n"
    )
    expected = [f"refused {outside}", "refused /escaped", "wrote inside.txt", "no connection"]
    assert run_asserts(code, [f"attempt() == {expected!r}"], FAST) == (sandbox.PASSED, "1 asserts")
    assert not outside.exists()


def test_judging_fills_pending_evals_and_leaves_the_rest(tmp_path):
    correct = codebank.BANK["gcd"].correct
    wrong = codebank.BANK["fib"].wrong
    answers = [
        {"name": "gcd", "answer": f"```python\n{correct}\n```", "finish_reason": "stop"},
        {"name": "fib", "answer": f"```python\n{wrong}\n```", "finish_reason": "stop"},
    ]
    bench = {
        "schema": "specgate.bench/v1",
        "runs": [{"run": 1, "eval": code_eval.pending(answers)}, {"run": 2, "eval": None}],
    }
    judged, report = code_eval.judge_runs(bench, FAST, concurrency=2)
    ev = judged["runs"][0]["eval"]
    assert (ev["problems"], ev["passed"]) == (2, 1)
    assert [r["name"] for r in ev["results"]] == ["gcd", "fib"]
    assert judged["runs"][1] == {"run": 2, "eval": None}
    assert report["uid"] != 0
    assert code_eval.is_pending(bench["runs"][0]["eval"])  # the input is not changed
    json.dumps(judged)


def test_without_pending_evals_nothing_runs_and_no_launcher_is_needed():
    bench = {"runs": [{"run": 1, "eval": None}]}
    missing = Sandbox(python=PYTHON, systemd_run="systemd-run-missing")
    assert code_eval.judge_runs(bench, missing) == (bench, None)


def test_the_stand_in_is_only_a_test_double():
    assert os.access(DOUBLE, os.X_OK)
    assert "tests only" in Path(DOUBLE).read_text(encoding="utf-8")


def test_a_venvs_python_is_run_as_the_interpreter_behind_it_so_a_private_tmp_cannot_hide_it(tmp_path):
    # A venv under /tmp (a CI clone) would vanish behind the unit's private /tmp; -I -S needs nothing from it.
    base = tmp_path / "base" / "python3.11"
    base.parent.mkdir()
    base.write_text("")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python3.11").symlink_to(base)
    (venv_bin / "python").symlink_to("python3.11")
    assert interpreter_behind(str(venv_bin / "python")) == str(base)
    assert interpreter_behind(str(base)) == str(base)
