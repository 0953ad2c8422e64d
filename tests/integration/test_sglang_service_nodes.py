"""sglang_service's validate entry point over a multi-node group (sglang_service_nodes_group): two inventory hosts,
both this machine over a local connection, each with its own GPU fact. A node that differs from rank 0, parallel
sizes beyond the group's GPUs and half-set node ranks are refused naming the host or the variable; a fitting group
passes where one host alone would not. Only the validate tag runs, so nothing can change this machine."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import ansible_runner
import pytest

from integration.test_sglang_service_validation import ENGINE_FACT, ENV_FACT, GOOD, PROJECT_ROOT


def h100(count: int = 8) -> dict:
    return {"has_gpus": True, "count": count, "names": ["NVIDIA H100 80GB HBM3"] * count, "arch": "sm90",
            "target_arch": "sm90", "compute_capability": "9.0", "cuda_driver_version": "12.8",
            "driver_version": "570.124.06"}


KIMI = {**GOOD, "sglang_service_tp_size": 16, "sglang_service_nodes_group": "kimi_h100_pair"}


def run_validate(extravars: dict, gpus: dict, ranks: dict | None = None, *, envs: dict | None = None,
                 weights: dict | None = None, limit: str | None = None, forks: int | None = None) -> tuple[str, str]:
    play = [
        {
            "hosts": "kimi_h100_pair",
            "gather_facts": False,
            "pre_tasks": [
                {
                    "name": "Hand over each node's preflight and sglang_env facts",
                    "tags": ["always"],
                    "ansible.builtin.set_fact": {
                        "specgate_sglang_env": "{{ test_envs[inventory_hostname] | default(test_env) }}",
                        "specgate_engine": ENGINE_FACT,
                        "specgate_gpu": "{{ test_gpus[inventory_hostname] }}",
                    },
                },
                {
                    "name": "Hand over the weights stage's fact where the test gives one",
                    "tags": ["always"],
                    "ansible.builtin.set_fact": {"specgate_weights": "{{ test_weights[inventory_hostname] }}"},
                    "when": "inventory_hostname in test_weights",
                },
            ],
            "roles": [{"role": "sglang_service"}],
        }
    ]
    lines = ["[kimi_h100_pair]"]
    for host in ("h100-a", "h100-b"):
        rank = f" sglang_service_node_rank={ranks[host]}" if ranks and host in ranks else ""
        lines.append(f"{host} ansible_connection=local ansible_python_interpreter={sys.executable}{rank}")
    with tempfile.TemporaryDirectory(prefix="sgsvc-nodes-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            playbook=play,
            inventory="\n".join(lines) + "\n",
            extravars={**extravars, "test_gpus": json.loads(json.dumps(gpus)), "test_env": ENV_FACT,
                       "test_envs": envs or {}, "test_weights": weights or {}},
            limit=limit,
            forks=forks,
            cmdline="--tags sglang_service_validate",
            envvars={
                "ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"),
                "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
            },
            quiet=True,
        )
        return result.status, result.stdout.read()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_fitting_pair_passes_where_one_host_alone_would_not():
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()})
    assert status == "successful", stdout[-3000:]
    single = {key: value for key, value in KIMI.items() if key != "sglang_service_nodes_group"}
    status, stdout = run_validate(single, {"h100-a": h100(), "h100-b": h100()})
    assert status == "failed"
    assert "needs 16 GPUs; this host has 8" in flat(stdout)


@pytest.mark.parametrize(
    ("extravars", "gpus", "ranks", "message"),
    [
        (KIMI, {"h100-a": h100(), "h100-b": h100(4)}, None,
         "sglang_service_nodes_group: node h100-b differs from rank 0 (h100-a) in GPU count: 4 GPUs against 8"),
        ({**KIMI, "sglang_service_tp_size": 32}, {"h100-a": h100(), "h100-b": h100()}, None,
         "sglang_service_tp_size: tp_size 32 x pp_size 1 x dp_size 1 needs 32 GPUs; the group's 2 nodes have 16"),
        (KIMI, {"h100-a": h100(), "h100-b": h100()}, {"h100-b": 0},
         "sglang_service_node_rank: set on h100-b but not on h100-a"),
        ({**KIMI, "sglang_service_dist_init_port": 31090}, {"h100-a": h100(), "h100-b": h100()}, None,
         "sglang_service_dist_init_port: 31090 is also sglang_service_port"),
    ],
    ids=["gpu_count_differs", "tp_beyond_group", "half_set_ranks", "rendezvous_on_api_port"],
)
def test_a_bad_group_is_refused_naming_the_host_or_variable(extravars, gpus, ranks, message):
    status, stdout = run_validate(extravars, gpus, ranks)
    assert status == "failed", stdout[-3000:]
    assert flat(message) in flat(stdout), stdout[-3000:]


def test_a_run_that_would_restart_one_node_alone_is_refused():
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()}, limit="h100-b")
    assert status == "failed"
    assert "this run's batch lacks h100-a: its nodes restart together or not at all" in flat(stdout)
    assert "Fix: run with -l kimi_h100_pair" in flat(stdout)


def test_fewer_forks_than_nodes_are_refused():
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()}, forks=1)
    assert status == "failed"
    assert "kimi_h100_pair has 2 nodes, but Ansible runs 1 fork(s)" in flat(stdout)


def test_a_node_whose_venv_differs_would_run_another_release_and_is_refused_naming_it():
    drifted = {**ENV_FACT, "fingerprint": "0123456789abcdef"}  # its installed set hashes otherwise
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()}, envs={"h100-b": drifted})
    assert status == "failed"
    text = flat(stdout)
    assert "The nodes of kimi_h100_pair (sglang_service_nodes_group) must run one release, but h100-b would run" in text
    assert "Nothing was changed on any node" in text


@pytest.mark.slow
def test_a_node_holding_another_weights_revision_is_refused_naming_it():
    def fact(target: str) -> dict:
        return {"target_path": "/models/target", "target_revision": target, "drafter_path": "/models/drafter",
                "drafter_revision": "d" * 40}

    weights = {"h100-a": fact("a" * 40), "h100-b": fact("b" * 40)}
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()}, weights=weights)
    assert status == "failed"
    text = flat(stdout)
    assert f"must load the same weights, but h100-b holds target {'b' * 40}" in text
    assert f"where rank 0 (h100-a) holds target {'a' * 40}" in text
    status, stdout = run_validate(KIMI, {"h100-a": h100(), "h100-b": h100()},
                                  weights={"h100-a": fact("a" * 40), "h100-b": fact("a" * 40)})
    assert status == "successful", stdout[-3000:]
