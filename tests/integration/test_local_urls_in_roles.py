"""Each role's URL of its own server, as Ansible renders it from the role's vars: the engine's (sglang_service), the
router's (sglang_router) and Prometheus's (sglang_monitoring) all come from one builder (specgate_local_url), so an
IPv6 listen address is bracketed and a wildcard one is reached on loopback in every role. The engine's URL once read
http://fd00::5:30000 for sglang_service_host fd00::5: no URL, and every health check of that host failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROLES = {
    "sglang_service": ("_sglang_service_url", "sglang_service_host", "sglang_service_port"),
    "sglang_router": ("_sglang_router_url", "sglang_router_host", "sglang_router_port"),
    "sglang_monitoring": ("_sglang_monitoring_prometheus_url", "sglang_monitoring_prometheus_host",
                          "sglang_monitoring_prometheus_port"),
}


def rendered_urls(tmp_path: Path, host: str, port: int) -> dict[str, str]:
    """Every role's URL variable, rendered from the role's own defaults and vars files with the listen address set."""
    plays = []
    # Extra vars: the role's vars files outrank a play's own vars.
    listen = {name: value for _, host_var, port_var in ROLES.values() for name, value in ((host_var, host),
                                                                                           (port_var, port))}
    for role, (url_var, _, _) in ROLES.items():
        plays.append({
            "hosts": "localhost", "gather_facts": False,
            "vars_files": [str(ROOT / "roles" / role / "defaults" / "main.yml"),
                           str(ROOT / "roles" / role / "vars" / "main.yml")],
            "tasks": [{"name": f"Render {url_var}", "ansible.builtin.debug": {"msg": f"{role}={{{{ {url_var} }}}}"}}],
        })  # fmt: skip
    playbook = tmp_path / "urls.yml"
    playbook.write_text(json.dumps(plays))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
         "-e", json.dumps(listen)],
        capture_output=True, text=True, cwd=ROOT, check=False,
        env={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory",
             "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The JSON callback's document, then profile_tasks' table (ansible.cfg enables it).
    results, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("{"):])
    messages = [result["msg"] for play in results["plays"] for task in play["tasks"]
                for result in task["hosts"].values()]  # fmt: skip
    return dict(message.split("=", 1) for message in messages)


@pytest.mark.parametrize(
    ("host", "url"),
    [("fd00::5", "http://[fd00::5]:31000"), ("::1", "http://[::1]:31000"), ("::", "http://127.0.0.1:31000"),
     ("0.0.0.0", "http://127.0.0.1:31000"), ("10.0.0.5", "http://10.0.0.5:31000")],
)
def test_every_role_builds_its_servers_url_one_way(tmp_path, host, url):
    assert rendered_urls(tmp_path, host, 31000) == dict.fromkeys(ROLES, url)
