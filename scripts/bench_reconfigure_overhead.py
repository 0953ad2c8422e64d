#!/usr/bin/env python3
"""Toolkit overhead of a reconfigure: a whole `deploy` of a new speculative config on a provisioned host,
minus the engine's own load time, as a ratio. Goal: overhead <= 5 % of the load and <= 10 s.

The host is the service scenario's container with the sim engine loading for a fixed time:

    flock /tmp/specgate-heavy.lock .venv/bin/molecule converge -s service     # provision (not measured)
    .venv/bin/python scripts/bench_reconfigure_overhead.py --repeat 2

The sim loads for --load-seconds (default 360 s: the field's lower bound for Kimi K2.6, 6-10 min, one load
measured 615 s); a shorter load (say 5 s) gives the same overhead in a minute, with a meaningless ratio.

Over SSH, as real hosts are reached (and as the scenario itself reaches its host: sshd on 127.0.0.1:31022, the
ordinary account deployer with sudo, the key id_ed25519 in the scenario's ephemeral directory;
molecule/shared/create.yml):

    .venv/bin/python scripts/bench_reconfigure_overhead.py --ssh 31022:$HOME/.ansible/tmp/molecule.*.service/id_ed25519

Each round deploys the other of two configs (block size 8 <-> 16 with its drafter) through ansible-runner,
exactly as `ansible-playbook deploy.yml -e @config` would run the sglang_service stage. The engine's load
time is what the role itself measured between `systemctl start` and the first /health 200 (the start
module's ready.waited_s); the engine's shutdown (stop_s) is reported beside it. Overhead = wall time of
the run - load time - shutdown time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "molecule" / "service_shared"))
from servicetest import CONVERGE, VARS, run_playbook  # noqa: E402 - scenario helpers, found by path

CONFIGS = (
    {"sglang_service_block_size": 8, "sglang_service_drafter_path": "/models/kimi-k26-dflash-b8"},
    {"sglang_service_block_size": 16, "sglang_service_drafter_path": "/models/kimi-k26-dflash-b16"},
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instance", default="specgate-service")
    parser.add_argument("--load-seconds", type=float, default=360.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--ssh", metavar="PORT:KEY",
        help="reach the container over SSH (deployer@127.0.0.1:PORT with private key KEY, becoming root with sudo) "
        "instead of root over podman exec, as a real host is reached",
    )  # fmt: skip
    args = parser.parse_args()

    env = {**VARS["sglang_service_extra_env"], "SPECGATE_SIM_LOAD_SECONDS": str(args.load_seconds)}
    connection = None
    if args.ssh:
        port, key = args.ssh.split(":", 1)
        connection = {
            "ansible_connection": "ansible.builtin.ssh", "ansible_host": "127.0.0.1", "ansible_port": int(port),
            "ansible_user": "deployer", "ansible_ssh_private_key_file": key,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        }  # fmt: skip
    rounds = []
    # Round 0 puts the host on config 0 with this load time; it is not measured.
    for i in range(args.repeat + 1):
        # The scenario's load timeout suits its short test loads; a realistic load needs a realistic bound.
        extravars = {**CONFIGS[i % 2], "sglang_service_extra_env": env,
                     "sglang_service_load_timeout": int(args.load_seconds * 2 + 120)}  # fmt: skip
        run = run_playbook(args.instance, CONVERGE, extravars, connection=connection)
        if run.status != "successful":
            print(run.stdout[-4000:], file=sys.stderr)
            return 2
        if i == 0:
            continue
        start = run.results("Follow the engine load")
        stop = run.results("Stop the running server")
        if not start or not stop:
            print("the run did not restart the server: nothing to measure", file=sys.stderr)
            return 2
        load = start[-1]["start"]["ready"]["waited_s"]
        shutdown = stop[-1]["stop_s"]
        overhead = run.seconds - load - shutdown
        rounds.append(
            {
                "total_s": round(run.seconds, 2),
                "engine_load_s": load,
                "engine_stop_s": shutdown,
                "overhead_s": round(overhead, 2),
                "ratio": round(overhead / load, 3),
            }
        )
        print(
            f"round {i}: total {run.seconds:6.1f} s  engine load {load:5.1f} s  engine stop {shutdown:4.1f} s  "
            f"overhead {overhead:5.1f} s  ratio {overhead / load:6.1%}"
        )
    overhead = statistics.median(r["overhead_s"] for r in rounds)
    load = statistics.median(r["engine_load_s"] for r in rounds)
    summary = {
        "transport": "ssh" if args.ssh else "podman",
        "rounds": rounds,
        "median_overhead_s": overhead,
        "median_engine_load_s": load,
        "ratio": round(overhead / load, 3),
        # The same overhead against the field's real load time (a 550 GB model, 6-10 min):
        "ratio_at_360s_load": round(overhead / 360, 4),
        "goal_met": overhead <= 10 and overhead / load <= 0.05,
    }
    print(
        f"median: overhead {overhead:.1f} s over an engine load of {load:.1f} s = {overhead / load:.1%} "
        f"(at a 360 s real load: {overhead / 360:.1%}); goal <= 5 % and <= 10 s: "
        f"{'met' if summary['goal_met'] else 'NOT met'}"
    )
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
