"""Start the sim as a real process on a free loopback port, for tests (here and in tests/sim/)."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import specgate_sim
from specgate_sim.tokenization import fixture_tokenizer_files

PACKAGE_PARENT = str(Path(specgate_sim.__file__).resolve().parent.parent)


# Ports a test's server binds: above every Linux ephemeral range (the kernel's default ends at 60999, and
# scripts/bootstrap keeps that end), so no outgoing connection ever holds one, and below the scenarios' and the demo's
# (CONTRIBUTING.md's port map: 30000-37099). A port the kernel hands out for bind(0) is an ephemeral one: between the
# test closing it and its server binding it, another worker's connection could take it.
PORT_RANGE = (61000, 65536)
PORT_SLOTS = 9  # disjoint blocks: pytest-xdist workers gw0-gw7 and, by process id, runs outside xdist


def _port_block() -> range:
    """This process's block of PORT_RANGE: its pytest-xdist worker's (gwN), else one chosen by its process id."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    slot = int(worker[2:]) % (PORT_SLOTS - 1) if worker[2:].isdigit() else PORT_SLOTS - 1
    size = (PORT_RANGE[1] - PORT_RANGE[0]) // PORT_SLOTS
    start = PORT_RANGE[0] + slot * size
    return range(start, start + size)


# Where the next port is looked for in this process's block: a fresh process starts at its own place (its process id),
# not where the last one did.
_next_port = itertools.count(os.getpid())


def free_port() -> int:
    """A loopback port no other test of this run is handed: the next free one of this process's block (_port_block),
    each handed out once per process until the block wraps around; a port still bound then is passed over."""
    block = _port_block()
    for _ in range(len(block)):
        port = block[next(_next_port) % len(block)]
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free loopback port in {block.start}-{block.stop - 1} (this test process's block)")


def write_model_dir(path: Path, config: Mapping[str, object], weight_bytes: int = 0, *, tokenizer: bool = True) -> Path:
    """A model directory: config.json, the fixture tokenizer (unless ``tokenizer`` is False: the server then counts
    with the sim's toy rule) and one sparse weight file of ``weight_bytes`` apparent size."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    if tokenizer:
        for name, data in fixture_tokenizer_files().items():
            (path / name).write_bytes(data)
    if weight_bytes:
        with (path / "model-00001-of-00001.safetensors").open("wb") as f:
            f.truncate(weight_bytes)
    return path


TARGET_CONFIG = {"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "max_position_embeddings": 262144}


def drafter_config(block_size: int = 8) -> dict[str, object]:
    return {
        "architectures": ["DFlashDraftModel"],
        "num_hidden_layers": 6,
        "dflash_config": {"block_size": block_size, "mask_token_id": 163838, "target_layer_ids": [1, 15, 30, 45, 58]},
    }


@dataclass
class SimProcess:
    proc: subprocess.Popen[str]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self, path: str) -> int | None:
        """HTTP status of GET ``path``; None when nothing listens."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=2) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def wait_status(self, path: str, wanted: int | None, timeout: float = 60.0) -> None:
        """Await the status: the bound only ends a failure, so it is wide enough for a machine at load 8."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status(path) == wanted:
                return
            if self.proc.poll() is not None and wanted is not None:
                raise AssertionError(f"sim exited {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"{path} never answered {wanted}:\n{self.log()}")

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.wait_status("/health", 200, timeout)

    def stop(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return int(self.proc.returncode)


# Simulated seconds per real second in the sim's own tests: a 10-minute load passes in 0.6 s.
DEFAULT_TIME_SCALE = 0.001


def start(
    args: Sequence[str],
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    time_scale: float = DEFAULT_TIME_SCALE,
) -> SimProcess:
    """``python -m specgate_sim.launch_server`` with ``args`` (``--port`` added unless given)."""
    port = port or free_port()
    argv = [sys.executable, "-m", "specgate_sim.launch_server", *args]
    if "--port" not in args:
        argv += ["--port", str(port)]
    full_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
        "SPECGATE_SIM_TIME_SCALE": str(time_scale),
        **(env or {}),
    }
    log = log_path.open("w")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=full_env, text=True)
    log.close()
    return SimProcess(proc, port, log_path)
