"""Run model-written code in a throwaway systemd unit, and prove first that the unit holds.

Model-written code runs only inside a transient unit that ``systemd-run`` starts (which needs the system manager,
so root launches it): a dynamic user allocated for the unit and released after it, no network and no socket at
all, the whole file system read-only except the unit's own private /tmp and /var/tmp (removed when it ends), the
homes and the release directories (where the API key lives) out of sight, other processes hidden, no privilege
gain, and CPU, memory, task, file-size and wall-clock limits. Before any answer runs, a probe in the same unit
shape shows that each of these holds on this host; a host where it does not (no systemd, a container without the
namespaces) fails with the cause named, never falls back to running the code some other way.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

# What running a problem's asserts on a piece of code gave.
PASSED = "passed"
FAILED = "failed"  # an assert did not hold
ERROR = "error"  # the code raised
TIMEOUT = "timeout"
SYNTAX_ERROR = "syntax_error"


_HARNESS = """\
import json, sys
def __raises(exc, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc:
        return True
    return False
__marker = sys.argv[1]
__asserts = json.loads(sys.argv[2])
__ns = {"__raises": __raises, "__name__": "solution"}
__source = sys.stdin.read()
try:
    exec(compile(__source, "solution.py", "exec"), __ns)
except SyntaxError as __e:
    print(__marker + json.dumps({"outcome": "syntax_error", "detail": str(__e)}))
    sys.exit(0)
except BaseException as __e:
    print(__marker + json.dumps({"outcome": "error", "detail": "while defining: %s: %s" % (type(__e).__name__, __e)}))
    sys.exit(0)
for __a in __asserts:
    try:
        __ok = eval(__a, __ns)
    except BaseException as __e:
        print(__marker + json.dumps({"outcome": "error", "detail": "%s -> %s: %s" % (__a, type(__e).__name__, __e)}))
        sys.exit(0)
    if not __ok:
        print(__marker + json.dumps({"outcome": "failed", "detail": "assert " + __a}))
        sys.exit(0)
print(__marker + json.dumps({"outcome": "passed", "detail": "%d asserts" % len(__asserts)}))
"""

# Runs in the same unit shape as the answers, before any of them: reports what the unit can do on this host.
_PROBE = """\
import errno, json, os, socket, sys
marker, port, host_tmp, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
def why(e):
    return errno.errorcode.get(getattr(e, "errno", None) or 0, type(e).__name__)
report = {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd()}
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    report["socket"] = "opened"
    try:
        s.settimeout(2)
        s.connect(("127.0.0.1", port))
        report["loopback"] = "connected"
    except OSError as e:
        report["loopback"] = why(e)
    s.close()
except OSError as e:
    report["socket"] = report["loopback"] = why(e)
root_file = "/specgate-sandbox-probe-" + marker.strip("@")
try:
    with open(root_file, "x") as f:
        f.write("x")
    os.unlink(root_file)
    report["write_root"] = "written"
except OSError as e:
    report["write_root"] = why(e)
try:
    with open("probe.txt", "w") as f:
        f.write("x")
    os.unlink("probe.txt")
    report["write_tmp"] = "written"
except OSError as e:
    report["write_tmp"] = why(e)
report["host_tmp_visible"] = os.path.exists(host_tmp)
report["read"] = {}
for p in paths:
    try:
        if os.path.isdir(p):
            os.listdir(p)
        else:
            with open(p, "rb") as f:
                f.read(1)
        report["read"][p] = "read"
    except OSError as e:
        report["read"][p] = why(e)
print(marker + json.dumps(report))
"""


class SandboxError(Exception):
    """The sandbox cannot be used on this host; no generated code was (or will be) run."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_bytes: int = 1024 * 1024 * 1024
    file_bytes: int = 4 * 1024 * 1024
    open_files: int = 64
    tasks: int = 16


# What the unit may do, each with the reason. Every property here worked under systemd 252 (Debian 12) and 257
# (Debian 13); the probe checks the ones a host can silently drop (systemd "proceeds without" a network namespace
# it cannot create, for example, which is why sockets are refused by a system call filter as well).
ISOLATION: tuple[tuple[str, str], ...] = (
    ("DynamicUser=yes", "a throwaway user made for the unit and released after it: not root, not the service user"),
    ("PrivateNetwork=yes", "its own network namespace: the host's loopback (the server, its API) is out of reach"),
    ("SystemCallFilter=~@network-io", "no socket of any family, even where the namespace cannot be had"),
    ("SystemCallErrorNumber=EPERM", "a refused system call fails with EPERM instead of killing the process"),
    ("ProtectSystem=strict", "the whole file system read-only"),
    ("ProtectHome=yes", "/home, /root and /run/user out of sight"),
    ("PrivateTmp=yes", "its own /tmp and /var/tmp, the only writable places, removed when it ends"),
    ("InaccessiblePaths=-/dev/shm", "the host-wide writable tmpfs PrivateTmp leaves"),
    ("PrivateDevices=yes", "no device nodes beyond null, zero, random and the like"),
    ("PrivateIPC=yes", "its own System V IPC and POSIX message queues"),
    ("NoNewPrivileges=yes", "no privilege gain through setuid binaries or file capabilities"),
    ("CapabilityBoundingSet=", "no capabilities at all"),
    ("RestrictNamespaces=yes", "no namespaces of its own"),
    ("RestrictSUIDSGID=yes", "no setuid/setgid files"),
    ("LockPersonality=yes", "no execution domain changes"),
    ("ProtectProc=invisible", "other processes (the server's command line) hidden"),
    ("ProcSubset=pid", "no /proc system files"),
    ("ProtectKernelTunables=yes", "no /proc/sys or /sys writes"),
    ("ProtectKernelModules=yes", "no module loading"),
    ("ProtectKernelLogs=yes", "no kernel log"),
    ("ProtectControlGroups=yes", "cgroups read-only"),
    ("ProtectClock=yes", "no clock changes"),
    ("ProtectHostname=yes", "no host name changes"),
    ("UMask=0077", "what it writes is its own"),
)


def resource_properties(limits: Limits) -> list[str]:
    """The unit's limits: wall clock and CPU time, memory (cgroup and address space: a container may not enforce
    the cgroup one), tasks (a fork bomb stops at the limit), file size (a print loop stops at it), files, no core."""
    cpu = int(limits.timeout_s) + 1
    return [
        f"RuntimeMaxSec={limits.timeout_s:g}",
        f"LimitCPU={cpu}",
        f"MemoryMax={limits.memory_bytes}",
        "MemorySwapMax=0",
        f"LimitAS={limits.memory_bytes}",
        f"TasksMax={limits.tasks}",
        f"LimitFSIZE={limits.file_bytes}",
        f"LimitNOFILE={limits.open_files}",
        "LimitCORE=0",
    ]


@dataclass(frozen=True)
class Sandbox:
    """How generated code is run: ``python`` (readable by any user, e.g. the serving venv's) inside a transient
    unit started by ``systemd_run``; ``inaccessible`` paths (the release directories, which hold the API key)
    are hidden from it on top of their modes."""

    python: str
    limits: Limits = field(default_factory=Limits)
    inaccessible: tuple[str, ...] = ()
    systemd_run: str = "systemd-run"

    def properties(self) -> list[str]:
        return (
            [prop for prop, _why in ISOLATION]
            + resource_properties(self.limits)
            + [f"InaccessiblePaths=-{path}" for path in self.inaccessible]
        )


def interpreter_behind(python: str) -> str:
    """The interpreter a venv's ``python`` stands for: the answers run with ``-I -S`` (no site-packages, no
    environment), so the venv adds nothing to them, and the sandbox's private /tmp must not hide the binary when
    the venv itself lives under /tmp. On a host the venv's base is the system's /usr/bin/python3.X."""
    return os.path.realpath(python)


def unit_name() -> str:
    return f"specgate-eval-{secrets.token_hex(6)}"


def sandbox_argv(sandbox: Sandbox, unit: str, args: Sequence[str]) -> list[str]:
    """``systemd-run`` running ``python -I -S <args>`` in the sandbox; the caller's stdin, stdout and stderr are
    the unit's (``--pipe``), ``--wait`` returns its exit status, ``--collect`` leaves no failed unit behind."""
    if not os.path.isabs(sandbox.python):
        raise SandboxError(f"the sandbox's Python must be an absolute path, got {sandbox.python!r}")
    return [
        sandbox.systemd_run,
        "--quiet",
        "--wait",
        "--pipe",
        "--collect",
        f"--unit={unit}",
        "--description=specgate coding eval: model-written code",
        "--working-directory=/tmp",
        "--setenv=PYTHONHASHSEED=0",
        *(f"--property={prop}" for prop in sandbox.properties()),
        "--",
        sandbox.python,
        "-I",
        "-S",
        *args,
    ]


# Exit statuses systemd gives a process it could not start as configured (systemd.exec(5)).
_EXEC_FAILURES = {200: "CHDIR", 203: "EXEC", 217: "USER", 218: "CAPABILITIES", 226: "NAMESPACE", 228: "SECCOMP"}
_NO_MANAGER = ("Failed to connect to bus", "System has not been booted with systemd", "Failed to create bus")


def launch_failure(returncode: int, output: str) -> str | None:
    """Why systemd-run could not run the command in the sandbox, or None when the command itself ran."""
    lines = [line for line in output.splitlines() if line.strip()]
    if any(sign in line for line in lines for sign in _NO_MANAGER):
        return (
            "systemd-run cannot reach the system manager (is systemd PID 1 here, and does root run this?): "
            + "; ".join(lines[-2:])
        )
    started = [line for line in lines if line.startswith("Failed to start transient")]
    if started:
        return f"systemd refused the sandbox unit: {started[-1]}"
    if returncode in _EXEC_FAILURES:
        name = _EXEC_FAILURES[returncode]
        hint = (
            " (in a container, systemd needs CAP_SYS_ADMIN to set up a unit's namespaces)" if returncode == 226 else ""
        )
        return f"systemd could not start the sandboxed process: exit status {returncode}/{name}{hint}"
    return None


@dataclass(frozen=True)
class Ran:
    returncode: int
    output: str
    elapsed_s: float
    killed: bool  # our own deadline passed and we stopped the unit


def _run_in_sandbox(sandbox: Sandbox, args: Sequence[str], stdin_text: str, grace_s: float = 10.0) -> Ran:
    unit = unit_name()
    argv = sandbox_argv(sandbox, unit, args)
    with tempfile.TemporaryDirectory(prefix="specgate-eval-") as work:  # the launcher's side, never the unit's
        src = os.path.join(work, "stdin")
        with open(src, "w", encoding="utf-8") as f:
            f.write(stdin_text)
        # Output goes to a file, not a pipe: the unit's file-size limit caps a runaway print loop.
        with open(src, "rb") as stdin, open(os.path.join(work, "out"), "w+b") as out:
            started = time.monotonic()
            try:
                proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=out, start_new_session=True)
            except OSError as exc:
                raise SandboxError(f"cannot run {sandbox.systemd_run}: {exc}") from exc
            killed = False
            try:
                proc.wait(timeout=sandbox.limits.timeout_s + grace_s)
            except subprocess.TimeoutExpired:
                killed = True
                systemctl = shutil.which("systemctl")
                if systemctl:
                    subprocess.run([systemctl, "stop", f"{unit}.service"], capture_output=True, timeout=30, check=False)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                proc.wait()
            elapsed = time.monotonic() - started
            out.seek(0)
            output = out.read().decode("utf-8", errors="replace")
    return Ran(proc.returncode, output, elapsed, killed)


def _verdict(output: str, marker: str) -> dict | None:
    for line in reversed(output.splitlines()):
        if line.startswith(marker):
            return json.loads(line[len(marker) :])
    return None


def run_asserts(code: str, asserts: Sequence[str], sandbox: Sandbox) -> tuple[str, str]:
    """Run ``code`` then each assert in the sandbox; (outcome, detail). Raises SandboxError when systemd could not
    run it at all (the answer's verdict would be the host's fault, not the model's)."""
    marker = f"@@specgate-{secrets.token_hex(8)}@@"
    ran = _run_in_sandbox(sandbox, ["-c", _HARNESS, marker, json.dumps(list(asserts))], code)
    result = _verdict(ran.output, marker)
    if result is not None:
        return result["outcome"], result["detail"][:500]
    failure = launch_failure(ran.returncode, ran.output)
    if failure:
        raise SandboxError(failure)
    if ran.killed or ran.elapsed_s >= sandbox.limits.timeout_s:
        return TIMEOUT, f"killed after {sandbox.limits.timeout_s:g} s"
    return ERROR, f"exited {ran.returncode} without a verdict (a resource limit?): {ran.output[-300:]}"


def probe_problems(report: dict, inaccessible: Sequence[str]) -> list[str]:
    """What the probe could do that generated code must not (or could not do that honest code needs)."""
    problems = []
    if report.get("uid") == 0 or report.get("gid") == 0:
        problems.append(f"it ran as root (uid {report.get('uid')}, gid {report.get('gid')})")
    if report.get("socket") == "opened":
        problems.append("it could open a socket")
    if report.get("loopback") == "connected":
        problems.append("it reached a listener on the host's loopback")
    if report.get("write_root") == "written":
        problems.append("it could write to /")
    if report.get("host_tmp_visible"):
        problems.append("it saw the host's /tmp (no private /tmp)")
    for path in inaccessible:
        if report.get("read", {}).get(path) == "read":
            problems.append(f"it could read {path}")
    if report.get("write_tmp") != "written":
        problems.append(f"it could not write its own temp dir ({report.get('write_tmp')}): honest code would fail")
    return problems


def check_sandbox(sandbox: Sandbox) -> dict:
    """Prove the sandbox holds on this host before any generated code runs in it; SandboxError names the cause."""
    found = shutil.which(sandbox.systemd_run)
    if not found:
        raise SandboxError(
            f"{sandbox.systemd_run} is not installed here: the coding eval runs model-written code only in a "
            "systemd sandbox (systemd is a precondition); set spec_gate_bench_eval: false to benchmark without it"
        )
    marker = f"@@specgate-probe-{secrets.token_hex(8)}@@"
    with tempfile.NamedTemporaryFile(prefix="specgate-probe-", dir="/tmp") as host_tmp, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        args = ["-c", _PROBE, marker, str(port), host_tmp.name, json.dumps(list(sandbox.inaccessible))]
        ran = _run_in_sandbox(sandbox, args, "")
    report = _verdict(ran.output, marker)
    if report is None:
        why = launch_failure(ran.returncode, ran.output) or f"exit status {ran.returncode}: {ran.output[-300:]}"
        raise SandboxError(f"the coding eval's sandbox does not work on this host: {why}")
    problems = probe_problems(report, sandbox.inaccessible)
    if problems:
        raise SandboxError(
            "the coding eval's sandbox does not hold on this host, so no model-written code was run: "
            + "; ".join(problems)
        )
    return report
