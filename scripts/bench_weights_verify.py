#!/usr/bin/env python3
"""How long hf_snapshot's no-op run takes (everything present: metadata only) for a 550 GB vs a 1 GB snapshot.

Both snapshots are sparse fixture repos (sizes by st_size, almost no disk) served by the local hub in sim/ and
already present on disk with their manifest, exactly the re-run case of a deployed host. The claim checked:
the no-op cost does not grow with snapshot size (same within noise) and stays under --limit-s.

    .venv/bin/python scripts/bench_weights_verify.py [--large-gb 550] [--small-gb 1] [--runs 10]

Exit status 1 when a no-op run changed something, took longer than the limit, or the large snapshot's median
exceeds the small one's by more than --noise-s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Import the module logic the way Ansible does (ansible.module_utils.specgate.*), without installing anything:
# the project's collection, whose paths module puts module_utils on that path.
sys.path.insert(0, str(ROOT / "local_collections"))
sys.path.insert(0, str(ROOT / "sim"))

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path
from ansible.module_utils.specgate.weights import hf_fetch  # noqa: E402 - after the path set-up above
from ansible.module_utils.specgate.weights.weights_snapshot import Options, SnapshotSpec, run  # noqa: E402
from specgate_sim import fixtures  # noqa: E402
from specgate_sim.hub_server import running_hub  # noqa: E402


def prepare(base: Path, size_gb: float) -> tuple[Path, Path]:
    """A hub root holding a sparse target of size_gb, and an identical copy already 'downloaded'."""
    hub_root = base / f"hub-{size_gb:g}"
    hub_root.mkdir(parents=True)
    commit = fixtures.sparse_target_commit(size_gb)
    sha = commit.commit_sha(None)
    fixtures.write_commit(commit, hub_root / fixtures.TARGET_SPARSE / sha)
    (hub_root / fixtures.TARGET_SPARSE / "repo.json").write_text(
        f'{{"gated": false, "branches": {{"main": "{sha}"}}, "commits": ["{sha}"]}}\n'
    )
    local = base / f"models-{size_gb:g}"
    fixtures.write_commit(commit, local)
    return hub_root, local


def noop_times(hub_url: str, local: Path, runs: int) -> list[float]:
    spec = [SnapshotSpec(name="target", repo_id=fixtures.TARGET_SPARSE, revision="main", local_dir=str(local))]
    kwargs = {"listing": hf_fetch.remote_listing, "fetch": hf_fetch.download, "describe": hf_fetch.describe_error,
              "forget": hf_fetch.forget_local_copy, "now": "bench"}
    first = run(spec, Options(endpoint=hub_url), **kwargs)  # writes the manifest, as the first converge did
    if first["snapshots"][0]["fetched"]:
        raise SystemExit(f"the pre-placed copy at {local} was not recognised as complete: {first['snapshots'][0]}")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = run(spec, Options(endpoint=hub_url), **kwargs)
        times.append(time.perf_counter() - started)
        if result["changed"]:
            raise SystemExit(f"a no-op run reported changed: {result}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large-gb", type=float, default=550)
    parser.add_argument("--small-gb", type=float, default=1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--limit-s", type=float, default=2.0)
    parser.add_argument("--noise-s", type=float, default=0.25, help="allowed gap between the two medians")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-weights-") as tmp:
        rows = []
        for size in (args.small_gb, args.large_gb):
            hub_root, local = prepare(Path(tmp), size)
            with running_hub(hub_root) as hub:
                # The hub hashes a file once (a real hub stores hashes); keep that out of the client's timing.
                hf_fetch.remote_listing(fixtures.TARGET_SPARSE, "main", endpoint=hub.url, token=None)
                times = noop_times(hub.url, local, args.runs)
            on_disk = sum(p.stat().st_blocks * 512 for p in local.rglob("*") if p.is_file())
            files = sum(1 for p in local.iterdir() if p.is_file())
            rows.append((size, files, on_disk, times))

    header = f"{'snapshot':>10} {'files':>6} {'on disk':>10} {'median s':>9} {'min s':>7} {'max s':>7}"
    print(f"{header}  ({args.runs} no-op runs each)")
    for size, files, on_disk, times in rows:
        print(f"{size:>7g} GB {files:>6} {on_disk / 1e6:>7.1f} MB {statistics.median(times):>9.3f} "
              f"{min(times):>7.3f} {max(times):>7.3f}")
    (_, _, _, small), (_, _, _, large) = rows
    gap = statistics.median(large) - statistics.median(small)
    slowest = max(*small, *large)
    ok = slowest < args.limit_s and gap < args.noise_s
    print(f"median gap {gap:+.3f} s (allowed < {args.noise_s} s), slowest {slowest:.3f} s (limit {args.limit_s} s): "
          + ("OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
