"""Helpers for the sglang_service scenarios' tests: run the role's playbooks with ansible-runner against
the scenario's container and read the server the way a client does (host networking: loopback)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner
import yaml

SHARED = Path(__file__).resolve().parent
PROJECT = SHARED.parent.parent
VARS: dict = yaml.safe_load((SHARED / "vars" / "service.yml").read_text())
CONVERGE = SHARED / "converge.yml"
ROLLBACK = PROJECT / "playbooks" / "rollback.yml"
SECRETS = (VARS["sglang_service_api_key"], VARS["sglang_service_hf_token"])
# The bracket keeps pgrep from matching the shell that runs it.
LAUNCH_PATTERN = "[s]pecgate_sim.launch_server"


@dataclass
class Run:
    status: str
    rc: int
    stdout: str
    seconds: float
    events: list = field(default_factory=list)

    def results(self, task_fragment: str) -> list[dict]:
        """Module results of every task whose name contains ``task_fragment`` (ok, changed or failed)."""
        found = []
        for event in self.events:
            if event.get("event") not in ("runner_on_ok", "runner_on_failed"):
                continue
            data = event.get("event_data", {})
            if task_fragment in data.get("task", ""):
                found.append(data.get("res", {}))
        return found

    @property
    def stats(self) -> dict:
        for event in reversed(self.events):
            if event.get("event") == "playbook_on_stats":
                return event["event_data"]
        return {}

    @property
    def failure(self) -> str:
        """The message of the task that ended the play (the last failure), or "" when none failed."""
        for event in reversed(self.events):
            if event.get("event") == "runner_on_failed" and not event.get("event_data", {}).get("ignore_errors"):
                return str(event["event_data"].get("res", {}).get("msg", ""))
        return ""

    def changed_count(self) -> int:
        return sum(self.stats.get("changed", {}).values())


def scenario_connection(instance: str) -> dict:
    """How molecule reaches ``instance`` (its inventory's host vars: SSH as the ordinary account for a platform with
    an ssh_port), or root over podman outside molecule."""
    inventory = os.environ.get("MOLECULE_INVENTORY_FILE")
    if not inventory:
        return {"ansible_connection": "containers.podman.podman"}
    return yaml.safe_load(Path(inventory).read_text())["all"]["hosts"][instance]


def run_playbook(
    instance: str, playbook: Path, extravars: dict | None = None, cmdline: str = "", connection: dict | None = None
) -> Run:
    """ansible-playbook through ansible-runner, with the scenario vars plus ``extravars``; ``connection`` replaces
    the scenario's host vars (the overhead benchmark reaches the same container over SSH)."""
    venv_bin = str(Path(sys.executable).parent)
    with tempfile.TemporaryDirectory(prefix="sgsvc-runner-") as private:
        start = time.monotonic()
        result = ansible_runner.run(
            private_data_dir=private,
            playbook=str(playbook),
            inventory={
                "all": {
                    "children": {
                        "sglang_hosts": {
                            "hosts": {instance: connection or scenario_connection(instance)}
                        }
                    }
                }
            },
            extravars={**VARS, **(extravars or {})},
            cmdline=cmdline or None,
            envvars={
                "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
                "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
            },
            quiet=True,
        )
        seconds = time.monotonic() - start
        stdout = result.stdout.read()
        events = list(result.events)
    return Run(status=result.status, rc=result.rc, stdout=stdout, seconds=seconds, events=events)


def http(path: str, api_key: str | None = None, port: int | None = None, timeout: float = 5.0) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{port or VARS['sglang_service_port']}{path}"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            body = response.read()
            return response.status, (json.loads(body) if body.strip() else {})
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except OSError:
        # refused or reset: nothing (or nothing ready) listens; 0 is never a real status
        return 0, {}


def server_info(port: int | None = None) -> dict:
    status, info = http("/server_info", VARS["sglang_service_api_key"], port=port)
    assert status == 200, f"/server_info answered {status}"
    return info


def main_pid(host) -> int:
    return int(host.check_output("systemctl show sglang -p MainPID --value"))


def journal(host, lines: int = 60) -> str:
    return host.run(f"journalctl -u sglang --no-pager -n {lines}").stdout


def server_pids(host) -> list[int]:
    out = host.run(f"pgrep -f '{LAUNCH_PATTERN}'").stdout.split()
    return [int(pid) for pid in out]


def release_of(host, pointer: str) -> str:
    return host.check_output(f"readlink /opt/specgate/{pointer}").rsplit("/", 1)[-1]
