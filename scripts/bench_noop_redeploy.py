#!/usr/bin/env python3
"""A no-op re-run of deploy.yml on the demo: wall time, tasks changed, and the slowest tasks. Goal: <= 30 s.

Re-runs are the common case (a config already deployed and gated, a pin unchanged): the run should prove the host
is as wanted and change nothing, quickly. Needs the demo up and deployed (the README's first command):

    scripts/bootstrap && .venv/bin/ansible-playbook -i inventory/demo playbooks/demo_host.yml \\
      && .venv/bin/ansible-playbook deploy.yml -i inventory/demo
    .venv/bin/python scripts/bench_noop_redeploy.py --repeat 3

Each round is `ansible-playbook deploy.yml -i inventory/demo` through ansible-runner; the first round settles
anything left to do and is reported but not counted unless --count-first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ansible_runner

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 30.0


def one_run(inventory: str, extra: list[str]) -> tuple[float, list[str], list[tuple[float, str]], str]:
    with tempfile.TemporaryDirectory() as private:
        started = time.monotonic()
        run = ansible_runner.run(
            private_data_dir=private, project_dir=str(ROOT), playbook=str(ROOT / "deploy.yml"),
            inventory=str(ROOT / inventory), cmdline=" ".join(extra) or None, quiet=True,
            envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
        )
        wall = time.monotonic() - started
        changed, durations = [], []
        for event in run.events:
            data = event.get("event_data", {})
            if event.get("event") == "runner_on_ok":
                if data.get("res", {}).get("changed"):
                    changed.append(data.get("task", ""))
                if data.get("duration") is not None:
                    durations.append((float(data["duration"]), f"{data.get('role', '')}: {data.get('task', '')}"))
        return wall, changed, sorted(durations, reverse=True), run.status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="measured rounds after the first")
    parser.add_argument("--inventory", default="inventory/demo")
    parser.add_argument("--count-first", action="store_true", help="count the first round too")
    parser.add_argument("--slowest", type=int, default=10, help="slowest tasks shown per round")
    parser.add_argument("extra", nargs="*", help="more ansible-playbook arguments")
    args = parser.parse_args()
    walls = []
    for round_no in range(0 if args.count_first else -1, args.repeat):
        wall, changed, slowest, status = one_run(args.inventory, args.extra)
        label = "settle" if round_no < 0 else f"round {round_no + 1}"
        print(f"{label}: {wall:.1f} s, status {status}, {len(changed)} task(s) changed {changed if changed else ''}")
        if status != "successful":
            print("the run failed: a no-op re-run must succeed", file=sys.stderr)
            return 1
        if round_no >= 0:
            walls.append(wall)
            if changed:
                print(f"  not a no-op: {changed}")
        for seconds, task in slowest[: args.slowest]:
            print(f"    {seconds:6.2f} s  {task}")
    median = statistics.median(walls)
    verdict = "meets" if median <= GOAL_S else "misses"
    print(f"no-op deploy.yml re-run on {args.inventory}: median {median:.1f} s over {len(walls)} run(s) "
          f"(min {min(walls):.1f}, max {max(walls):.1f}); {verdict} the goal of <= {GOAL_S:.0f} s")
    return 0 if median <= GOAL_S else 2


if __name__ == "__main__":
    sys.exit(main())
