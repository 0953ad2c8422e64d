#!/usr/bin/env python3
"""A fleet rollout's cost and its clients' view (issue 15): rollout wall time over N replicas against N times one
replica's reconfigure, for serial 1 and for larger batches, and the share of requests through the router that
succeeded while the replicas were rolled one at a time (goal: 100 %).

Each round is `ansible-playbook deploy.yml` through ansible-runner with a configuration no replica has served yet
(the --config template with its `{round}` filled in, so each round makes a new release on every replica):

1. one replica alone (`--limit` it, plus the router host): its reconfigure time, the unit the ratios divide by;
2. every replica with `fleet_rollout_serial: [1]`, a client sending requests through the router all along;
3. every replica in the batches of --batches (default: all at once, `["100%"]`). With a router in front, a batch
   may take out only as many replicas as sglang_router_min_healthy_workers spares; --batch-min-healthy sets that
   floor for this round (default 0: the round measures the batch's wall time, its requests are not counted).

The three rounds are repeated --repeats times (default 3; each repetition's ratios divide by its own one-replica
time), and each figure is printed as its median with the min and max, beside the rollout's cost per replica (its
wall time over the replicas). Every round's row, the ratios and the summary are kept under --reports-dir (default
reports/fleet-bench/<UTC time>.json and .md), so a figure outlives the terminal it was printed in.

On the molecule fleet (two replicas behind sglang-router 0.3.2, the sim as engine):

    .venv/bin/molecule converge -s fleet
    .venv/bin/python scripts/bench_fleet_rollout.py \\
        -i "$(ls -td ~/.ansible/tmp/molecule.*.fleet | head -1)/inventory/ansible_inventory.yml" \\
        --router http://127.0.0.1:36050 \\
        --api-key sk-specgate-demo --config '{"demo_host_manage_container": false, "spec_gate_max_regression": 0.5,
        "sglang_service_extra_env": {"SPECGATE_SIM_LOAD_SECONDS": "2", "SPECGATE_SIM_TIME_SCALE": "0.2",
        "SPECGATE_SIM_SEED": "{round}"}}'
    .venv/bin/molecule destroy -s fleet

(The wide regression bound keeps a round from being stopped by the sim's speed noise on a busy machine: the
benchmark measures the rollout, so each round must end promoted; a round that does not is reported as not
comparable and the script exits 1.)

On a real fleet, --config sets what you roll out (a profile's variables, with a harmless per-round value such as an
engine environment variable so each round is a new release), -i your inventory, --router your router's URL.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import ansible_runner
import httpx

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Round:
    name: str
    hosts: list[str]
    wall_s: float
    status: str
    promoted: list[str] = field(default_factory=list)
    # Per replica that left the router: requests in flight on it then, and seconds its drain waited on them.
    leaves: dict[str, tuple[int | None, float | None]] = field(default_factory=dict)


def fill(template: str, round_no: int) -> dict:
    """The round's extra vars: the template with `{round}` replaced (a JSON object)."""
    value = json.loads(template.replace("{round}", str(round_no)))
    if not isinstance(value, dict):
        raise SystemExit(f"--config must be a JSON object of variables, got {template!r}")
    return value


@dataclass
class Repetition:
    """One repetition's three rounds: one replica alone, serial 1, the batches."""

    single: Round
    serial: Round
    batched: Round

    def rounds(self) -> list[Round]:
        return [self.single, self.serial, self.batched]


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """min, median, max."""
    return min(values), statistics.median(values), max(values)


def spread_text(values: Sequence[float], unit: str) -> str:
    low, middle, high = spread(values)
    return f"{middle:.2f}{unit} median (min {low:.2f}{unit}, max {high:.2f}{unit})"


def ratio(rollout: Round, single: Round) -> float:
    """A rollout's wall time over the replicas it rolled, each at one replica's reconfigure time."""
    return rollout.wall_s / (len(rollout.hosts) * single.wall_s)


def ratio_lines(reps: Sequence[Repetition]) -> list[str]:
    """Per rollout kind: its ratio's median, min and max over the repetitions, and its cost per replica."""
    hosts = len(reps[0].serial.hosts)
    lines = [f"one replica ({reps[0].single.hosts[0]}): {spread_text([r.single.wall_s for r in reps], ' s')}"]
    for name, pick in (("serial 1", lambda r: r.serial), (reps[0].batched.name, lambda r: r.batched)):
        lines.append(
            f"{name}: rollout / ({hosts} x one replica) = {spread_text([ratio(pick(r), r.single) for r in reps], '')};"
            f" per replica {spread_text([pick(r).wall_s / hosts for r in reps], ' s')}"
        )
    return lines


def success_line(ok: int, failed: int) -> str:
    total = ok + failed
    share = 100.0 * ok / total if total else 0.0
    return f"requests through the router during the serial-1 rollouts: {ok}/{total} succeeded ({share:.2f} %)"


def write_reports(directory: Path, stamp: str, reps: Sequence[Repetition], lines: Sequence[str], *, ok: int,
                  failed: Sequence[str]) -> list[Path]:
    """The run kept: every round's row, the ratios per repetition and the printed summary, as JSON and markdown."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = [{"repetition": number, **asdict(rnd)} for number, rep in enumerate(reps, 1) for rnd in rep.rounds()]
    ratios = [{"repetition": number, "serial1": ratio(rep.serial, rep.single),
               "batches": ratio(rep.batched, rep.single)} for number, rep in enumerate(reps, 1)]  # fmt: skip
    json_path, md_path = directory / f"{stamp}.json", directory / f"{stamp}.md"
    json_path.write_text(json.dumps({"rows": rows, "ratios": ratios, "summary": list(lines), "requests_ok": ok,
                                     "requests_failed": list(failed)}, indent=2) + "\n")  # fmt: skip
    table = ["| repetition | round | replicas | wall s | status | promoted |", "|---|---|---|---|---|---|"]
    table += [f"| {row['repetition']} | {row['name']} | {len(row['hosts'])} | {row['wall_s']:.1f} | {row['status']} | "
              f"{', '.join(row['promoted']) or '-'} |" for row in rows]
    md_path.write_text("\n".join([f"# Fleet rollout benchmark, {stamp}", "", *lines, "", *table, ""]))
    return [json_path, md_path]


class Client:
    """Requests through the router until stopped (or a cap on count or time is reached), `concurrency` at a time,
    EOS ignored so each runs its full length: several requests are in flight on every replica whenever one leaves the
    router, and its drain waits on them. Each thread's requests have a length of their own, from `max_new_tokens` down
    to about half of it: requests of one length sent at once all end in the same step, and a replica read at that
    instant had none in flight (a fleet test once saw 0 at a leave, then 2 at the drain a second later). Counts every
    answer that is not a 200. molecule/fleet's tests send their traffic with it too."""

    def __init__(self, router: str, api_key: str | None, max_requests: int | None = None,
                 max_seconds: float | None = None, *, concurrency: int = 8, max_new_tokens: int = 3500) -> None:
        self.router = router.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.ok = 0
        self.failed: list[str] = []
        self._limits = (max_requests, max_seconds)
        self._count = threading.Lock()
        self._stop = threading.Event()
        self.lengths = [max_new_tokens - index * max_new_tokens // (2 * concurrency) for index in range(concurrency)]
        self._threads = [threading.Thread(target=self._run, args=(length,), daemon=True) for length in self.lengths]

    @property
    def sent(self) -> int:
        return self.ok + len(self.failed)

    def _capped(self, started: float) -> bool:
        max_requests, max_seconds = self._limits
        return ((max_requests is not None and self.sent >= max_requests)
                or (max_seconds is not None and time.monotonic() - started > max_seconds))

    def _run(self, max_new_tokens: int) -> None:
        started = time.monotonic()
        with httpx.Client(timeout=120, headers=self.headers) as client:
            while not self._stop.is_set() and not self._capped(started):
                try:
                    answer = client.post(f"{self.router}/generate", json={
                        "text": f"def add_{self.sent}(a, b):",
                        "sampling_params": {"max_new_tokens": max_new_tokens, "ignore_eos": True}})
                    failure = None if answer.status_code == 200 else f"{answer.status_code}: {answer.text[:200]}"
                except httpx.HTTPError as error:
                    failure = repr(error)
                with self._count:
                    if failure is None:
                        self.ok += 1
                    else:
                        self.failed.append(failure)
                time.sleep(0.05)

    def __enter__(self) -> Client:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=150)


class Traffic:
    """Several clients at once (molecule/fleet's tests: long requests, several in flight on every replica when one
    leaves the router, beside short ones that finish in every bake window), their answers counted together."""

    def __init__(self, *clients: Client) -> None:
        self.clients = list(clients)

    @property
    def ok(self) -> int:
        return sum(client.ok for client in self.clients)

    @property
    def failed(self) -> list[str]:
        return [failure for client in self.clients for failure in client.failed]

    def answered_more(self, count: int, deadline_s: float = 30) -> int:
        """Wait (up to ``deadline_s``) until ``count`` more requests were answered, so requests are seen to keep
        flowing after the rollout ends (not a fixed sleep); how many more were."""
        answered = self.ok + len(self.failed)
        deadline = time.monotonic() + deadline_s
        while self.ok + len(self.failed) < answered + count and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.ok + len(self.failed) - answered

    def __enter__(self) -> Traffic:
        for client in self.clients:
            client.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self.clients:
            client.__exit__(*exc)


def deploy(inventory: str, extravars: dict, limit: str | None, name: str, hosts: list[str]) -> Round:
    with tempfile.TemporaryDirectory() as private:
        reports = Path(private) / "reports"
        started = time.monotonic()
        run = ansible_runner.run(
            private_data_dir=private, project_dir=str(ROOT), playbook=str(ROOT / "deploy.yml"), inventory=inventory,
            extravars={**extravars, "fleet_rollout_reports_dir": str(reports)}, limit=limit, quiet=True,
            envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
        )
        wall = time.monotonic() - started
        # The rollout's own report says which replicas ended promoted on the round's release, and how each left.
        rows = [row for path in reports.glob("*/fleet.json") for row in json.loads(path.read_text())["replicas"]]
        # A replica's row lists its nodes (a node group's every host): the round's hosts are the nodes.
        promoted = [node for row in rows if row.get("outcome") == "promoted"
                    for node in row.get("nodes", [row["host"]])]
        leaves = {row["host"]: (row["router"].get("in_flight_at_leave"), row["router"].get("drained_s"))
                  for row in rows if (row.get("router") or {}).get("removed")}
        if run.status != "successful":
            failures = [str(e["event_data"].get("res", {}).get("msg", ""))[:300] for e in run.events
                        if e.get("event") == "runner_on_failed"]
            print(f"{name}: deploy.yml ended {run.status}: {failures[:3]}", file=sys.stderr)
        return Round(name, hosts, wall, run.status, sorted(promoted), leaves)


def inventory_groups(inventory: str) -> dict[str, list[str]]:
    # The project's ansible.cfg, and its collections loaded, as ansible-playbook would: its vars plugin is one of them.
    os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader

    init_plugin_loader()

    manager = InventoryManager(loader=DataLoader(), sources=[inventory])
    return {name: [h.name for h in group.get_hosts()] for name, group in manager.groups.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--group", default="sglang_hosts", help="the replicas' group")
    parser.add_argument("--router-host", default="", help="the router's inventory host (default: the sglang_routers "
                        "group's first host, if any), kept in the single-replica round's --limit")
    parser.add_argument("--router", required=True, help="the router's URL, for the client")
    parser.add_argument("--api-key", default=None, help="the key the router wants from clients, if any")
    parser.add_argument("--config", required=True, help="JSON object of the variables each round rolls out; "
                        "{round} is replaced by the round's number so each round is a new release")
    parser.add_argument("--batches", default='["100%"]', help="fleet_rollout_serial of the batch round (JSON list)")
    parser.add_argument("--batch-min-healthy", type=int, default=0,
                        help="sglang_router_min_healthy_workers during the batch round")
    parser.add_argument("--first-round", type=int, default=int(time.time()) % 100000,
                        help="the first round's number (rounds count up from it)")
    parser.add_argument("--concurrency", type=int, default=8, help="the client's requests in flight at once")
    parser.add_argument("--max-new-tokens", type=int, default=3500, help="each request's output length")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of the three rounds (at least 1)")
    parser.add_argument("--reports-dir", type=Path, default=ROOT / "reports" / "fleet-bench",
                        help="where the run's rows, ratios and summary are kept")
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit("--repeats must be at least 1")

    groups = inventory_groups(args.inventory)
    replicas = groups.get(args.group, [])
    if not replicas:
        raise SystemExit(f"group {args.group} of {args.inventory} has no hosts: pass --group with the replicas' group")
    router_host = args.router_host or next(iter(groups.get("sglang_routers", [])), "")
    limit_one = ",".join([replicas[0]] + ([router_host] if router_host else []))
    batch_serial = json.loads(args.batches)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")

    print(f"fleet: {len(replicas)} replicas ({', '.join(replicas)}), router {args.router}", flush=True)
    reps: list[Repetition] = []
    answered_ok, failed_requests = 0, []
    for repetition in range(args.repeats):
        round_no = args.first_round + 3 * repetition
        single = deploy(args.inventory, fill(args.config, round_no), limit_one, "one replica", [replicas[0]])
        print(f"[{repetition + 1}/{args.repeats}] one replica: {single.wall_s:.1f} s, {single.status}", flush=True)
        # Requests through the router during the serial rounds only: a batch may take every replica out at once.
        with Client(args.router, args.api_key, concurrency=args.concurrency,
                    max_new_tokens=args.max_new_tokens) as client:
            serial = deploy(args.inventory, {**fill(args.config, round_no + 1), "fleet_rollout_serial": [1]}, None,
                            "serial 1", replicas)
            time.sleep(3)  # requests keep flowing after the last replica is back
        answered_ok, failed_requests = answered_ok + client.ok, failed_requests + client.failed
        print(f"[{repetition + 1}/{args.repeats}] serial 1: {serial.wall_s:.1f} s, {serial.status}", flush=True)
        batched = deploy(args.inventory, {**fill(args.config, round_no + 2), "fleet_rollout_serial": batch_serial,
                                          "sglang_router_min_healthy_workers": args.batch_min_healthy},
                         None, f"batches {json.dumps(batch_serial)}", replicas)
        print(f"[{repetition + 1}/{args.repeats}] {batched.name}: {batched.wall_s:.1f} s, {batched.status}",
              flush=True)
        reps.append(Repetition(single, serial, batched))

    print()
    bad = [r for rep in reps for r in rep.rounds() if r.status != "successful" or set(r.promoted) != set(r.hosts)]
    for r in bad:
        print(f"NOT COMPARABLE: round '{r.name}' ended {r.status} with {r.promoted or 'no replica'} promoted "
              f"(wanted {r.hosts})")
    lines = [*ratio_lines(reps), success_line(answered_ok, len(failed_requests))]
    print("\n".join(lines))
    for rep in reps:
        for replica, (in_flight, drained_s) in rep.serial.leaves.items():
            print(f"  {replica} left the router with {in_flight} request(s) in flight, drained in {drained_s} s")
    for failure in failed_requests[:5]:
        print(f"  failed request: {failure}")
    for path in write_reports(args.reports_dir, stamp, reps, lines, ok=answered_ok, failed=failed_requests):
        print(f"kept: {path}")
    return 1 if bad or failed_requests else 0


if __name__ == "__main__":
    sys.exit(main())
