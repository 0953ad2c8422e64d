#!/usr/bin/env bash
# Prove the restart protocol's GPU-memory wait on a real NVIDIA GPU. Needs only python3, torch and
# nvidia-smi (no ansible); run from the repository root:
#
#   scripts/gpu_release_probe_on_device.sh            # HOLD_SECONDS=5 GIB=4 TIMEOUT_SECONDS=5 by default
#
# Case "release": a process allocates GIB GiB on GPU 0 and exits after HOLD_SECONDS; the wait (the same
# module_utils code the sglang_service_stop module runs) must return released=true promptly after exit.
# Case "held": the memory stays held; the wait must return released=false after TIMEOUT_SECONDS and name
# the PID. Prints one JSON object per case and exits non-zero when either expectation fails.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "${HOLD_SECONDS:-5}" "${GIB:-4}" "${TIMEOUT_SECONDS:-5}" <<'PY'
import json
import subprocess
import sys
import threading
import time

sys.path.insert(0, "module_utils/specgate/service")
import gpu_release  # noqa: E402  (plain stdlib module; no ansible needed)

hold, gib, timeout = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
HOLDER = (
    "import sys, time, torch\n"
    "x = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device='cuda:0')\n"
    "x.fill_(1); torch.cuda.synchronize()\n"
    "print('held', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def start_holder(seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(gib), str(seconds)], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if line != "held":
        raise SystemExit(f"holder did not allocate GPU memory (said {line!r}, exit {proc.poll()})")
    exited = {}

    def reap():
        proc.wait()
        exited["t"] = time.monotonic()

    threading.Thread(target=reap, daemon=True).start()
    return proc, exited


def listed(pid, within=5.0):
    """The PID's MiB once nvidia-smi lists it (driver bookkeeping can trail the allocation briefly)."""
    deadline = time.monotonic() + within
    while True:
        apps = gpu_release.parse_compute_apps(gpu_release.query_nvidia_smi())
        if pid in apps or time.monotonic() > deadline:
            return pid in apps, apps.get(pid)
        time.sleep(0.1)


ok = True

# Case 1: the memory is released when the process exits; the wait must notice promptly.
proc, exited = start_holder(hold)
is_listed, seen = listed(proc.pid)
if not is_listed:
    print(json.dumps({"case": "release", "error": f"nvidia-smi does not list PID {proc.pid} (PID namespace?)"}))
    proc.kill()
    sys.exit(2)
t0 = time.monotonic()
result = gpu_release.wait_for_gpu_release([proc.pid], timeout=hold + 60, interval=0.1)
t_done = time.monotonic()
lag = t_done - exited["t"] if "t" in exited else None
case1 = {
    "case": "release",
    "pid": proc.pid,
    "held_mib_seen": seen,
    "hold_s": hold,
    "released": result.released,
    "wait_s": round(t_done - t0, 3),
    "returned_after_exit_s": None if lag is None else round(lag, 3),
    "polls": result.polls,
}
print(json.dumps(case1))
ok &= result.released and lag is not None and lag < 2.0

# Case 2: the memory stays held; the wait must time out at the bound and name the PID.
proc, _ = start_holder(timeout + 60)
t0 = time.monotonic()
result = gpu_release.wait_for_gpu_release([proc.pid], timeout=timeout, interval=0.25)
waited = time.monotonic() - t0
proc.kill()
proc.wait()
case2 = {
    "case": "held",
    "pid": proc.pid,
    "timeout_s": timeout,
    "released": result.released,
    "wait_s": round(waited, 3),
    "still_held": {str(k): v for k, v in result.still_held.items()},
}
print(json.dumps(case2))
ok &= (not result.released) and proc.pid in result.still_held and timeout <= waited < timeout + 2.0
print(json.dumps({"verdict": "pass" if ok else "FAIL"}))
sys.exit(0 if ok else 1)
PY
