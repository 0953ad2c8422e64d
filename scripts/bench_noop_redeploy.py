#!/usr/bin/env python3
"""A no-op re-run of deploy.yml on the demo: wall time, tasks changed, and the slowest tasks. Goal: <= 30 s.

Re-runs are the common case (a config already deployed and gated, a pin unchanged): the run should prove the host
is as wanted and change nothing, quickly. Needs the demo up and deployed (the README's first command):

    scripts/bootstrap && .venv/bin/ansible-playbook -i inventory/demo playbooks/demo_host.yml \\
      && .venv/bin/ansible-playbook deploy.yml -i inventory/demo
    .venv/bin/python scripts/bench_noop_redeploy.py --repeat 3

Each round is `ansible-playbook deploy.yml -i inventory/demo` through ansible-runner; the first round settles
anything left to do and is reported but not counted unless --count-first. Then one `--check` round: check mode
must predict what the re-run did, so it must report 0 tasks changed too (--no-check skips it). The last line gives
the median against the goal; the exit status is 0 when the median meets it, every measured round changed nothing on
the host and the check round reported nothing changed. Each round writes its own rollout report on the controller,
and says so (changed): those writes are counted apart (scripts/run_changes.py), not as the host's changes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import ansible_runner
from run_changes import is_report_write, report_writes

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
GOAL_S = 30.0


@dataclass
class Round:
    wall: float
    status: str
    changed: list[str] = field(default_factory=list)
    report_writes: int = 0
    slowest: list[tuple[float, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def summarize(events: list[dict]) -> tuple[list[str], list[tuple[float, str]], list[str]]:
    """(tasks changed, (seconds, "role: task") slowest first, failed tasks with their message) of one run's
    ansible-runner events. A task that ran in a loop counts once (its runner_on_ok holds the items); skipped
    tasks take no host time and are left out; the rollout report's writes on the controller are no host change."""
    changed, durations, failed = [], [], []
    for event in events:
        data = event.get("event_data", {})
        task = data.get("task", "")
        name = f"{data['role']}: {task}" if data.get("role") else task
        if event.get("event") == "runner_on_ok":
            if data.get("res", {}).get("changed") and not is_report_write(data):
                changed.append(name)
            if data.get("duration") is not None:
                durations.append((float(data["duration"]), name))
        elif event.get("event") == "runner_on_failed" and not data.get("ignore_errors"):
            failed.append(f"{name}: {data.get('res', {}).get('msg', '')}")
    return changed, sorted(durations, key=lambda d: -d[0]), failed


def verdict(walls: list[float], goal: float = GOAL_S) -> str:
    """The benchmark's last line: the median against the goal."""
    median = statistics.median(walls)
    return (f"median {median:.1f} s over {len(walls)} run(s) (min {min(walls):.1f}, max {max(walls):.1f}); "
            f"{'meets' if median <= goal else 'misses'} the goal of <= {goal:.0f} s")


def one_run(inventory: str, extra: list[str]) -> Round:
    # ansible-runner looks ansible-playbook up on this process's PATH: the venv's, not the system's.
    path = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PATH"] = path
    with tempfile.TemporaryDirectory() as private:
        started = time.monotonic()
        run = ansible_runner.run(
            private_data_dir=private, project_dir=str(ROOT), playbook=str(ROOT / "deploy.yml"),
            inventory=str(ROOT / inventory), cmdline=" ".join(extra) or None, quiet=True,
            envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PATH": path},
        )
        wall = time.monotonic() - started
        events = list(run.events)
        changed, slowest, failed = summarize(events)
        if run.status != "successful" and not failed:
            failed = [run.stdout.read()[-2000:]]
        return Round(wall, run.status, changed, len(report_writes(events)), slowest, failed)


def report(label: str, result: Round, slowest: int) -> None:
    print(f"{label}: {result.wall:.1f} s, status {result.status}, {len(result.changed)} task(s) changed on the host"
          + (f": {result.changed}" if result.changed else "")
          + f" ({result.report_writes} write(s) of the rollout report on the controller)")
    for seconds, task in result.slowest[:slowest]:
        print(f"    {seconds:6.2f} s  {task}")
    for failure in result.failed:
        print(f"  failed: {failure}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="measured rounds after the first")
    parser.add_argument("--inventory", default="inventory/demo")
    parser.add_argument("--count-first", action="store_true", help="count the first round too")
    parser.add_argument("--no-check", action="store_true", help="skip the --check round")
    parser.add_argument("--slowest", type=int, default=10, help="slowest tasks shown per round")
    parser.add_argument("extra", nargs="*", help="more ansible-playbook arguments")
    args = parser.parse_args()
    walls, not_noop = [], False
    for round_no in range(0 if args.count_first else -1, args.repeat):
        result = one_run(args.inventory, args.extra)
        report("settle" if round_no < 0 else f"round {round_no + 1}", result, args.slowest)
        if result.status != "successful":
            print("the run failed: a no-op re-run must succeed", file=sys.stderr)
            return 1
        if round_no >= 0:
            walls.append(result.wall)
            not_noop = not_noop or bool(result.changed)
    check_changed: list[str] = []
    if not args.no_check:
        result = one_run(args.inventory, [*args.extra, "--check"])
        report("--check", result, args.slowest)
        if result.status != "successful":
            print("the --check run failed", file=sys.stderr)
            return 1
        check_changed = result.changed
    print(f"no-op deploy.yml re-run on {args.inventory}: {verdict(walls)}")
    if not args.no_check:
        print(f"--check of the no-op re-run: {len(check_changed)} task(s) changed (must be 0)")
    if not_noop:
        print("not a no-op: a measured round changed something (above)")
    ok = statistics.median(walls) <= GOAL_S and not not_noop and not check_changed
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
