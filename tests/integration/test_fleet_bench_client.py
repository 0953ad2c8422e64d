"""The fleet client (scripts/bench_fleet_rollout.py's, which molecule/fleet sends its traffic with) against a real sim
process: it keeps `concurrency` requests in flight at once, each its full length, so a replica leaving the router has
several running for its drain to wait on; every answer is counted. Its threads' requests differ in length, so they do
not all end in one step: once answers come back, the server is never read with nothing in flight."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from ansible.module_utils.specgate.fleet.worker_drain import read_load
from specgate_sim import testing

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_fleet_rollout as fleet_bench  # a script, found through the path above


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """One sim process for the module's clients (each test waits for its own answers)."""
    tmp_path = tmp_path_factory.mktemp("sim")
    target = testing.write_model_dir(tmp_path / "target", testing.TARGET_CONFIG, weight_bytes=1 << 20)
    server = testing.start(["--model-path", str(target)], log_path=tmp_path / "sim.log",
                           env={"SPECGATE_SIM_LOAD_SECONDS": "0", "SPECGATE_SIM_TIME_SCALE": "0.2"})
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def test_the_client_keeps_several_full_length_requests_in_flight_and_counts_each(sim) -> None:
    busiest, quietest = 0, None
    with fleet_bench.Client(sim.url, None, concurrency=4, max_new_tokens=256) as client:
        deadline = time.monotonic() + 60
        while client.ok < 8 and time.monotonic() < deadline:
            answered = client.ok
            load, _ = read_load(sim.url)
            in_flight = load.running + load.waiting if load else 0
            busiest = max(busiest, in_flight)
            if 0 < answered < 8:  # between the first answer and the last counted one
                quietest = in_flight if quietest is None else min(quietest, in_flight)
            time.sleep(0.05)
    assert client.failed == [], client.failed[:3]
    assert client.ok >= 8
    assert busiest >= 3, busiest  # one request at a time would read at most 1
    assert len(set(client.lengths)) == 4, client.lengths  # one length per thread
    assert min(client.lengths) >= 128, client.lengths  # none shorter than half of max_new_tokens
    assert quietest is not None, "no reading between the first answer and the last"
    assert quietest >= 1, quietest


def test_traffic_of_several_clients_counts_their_answers_together_and_sees_more_come(sim) -> None:
    long, short = (fleet_bench.Client(sim.url, None, concurrency=2, max_new_tokens=256),
                   fleet_bench.Client(sim.url, None, concurrency=1, max_new_tokens=16))
    with fleet_bench.Traffic(long, short) as traffic:
        more = traffic.answered_more(6, deadline_s=60)
    assert more >= 6, more
    # Once it stopped, its clients' threads have ended: the sums are final.
    assert (traffic.ok, traffic.failed) == (long.ok + short.ok, long.failed + short.failed)
    assert traffic.failed == [], traffic.failed[:3]
    assert long.ok >= 1
    assert short.ok >= 1
