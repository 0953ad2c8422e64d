"""The sweep's controller-only module says where it runs and returns what the sweep reads.
(That it renders and documents exactly its argument spec is test_module_docs.py's, for every module.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"


def test_the_sweep_state_module_says_it_runs_on_the_controller_and_returns_what_the_sweep_reads():
    done = subprocess.run([str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), "spec_sweep_state"],
                          capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)["spec_sweep_state"]
    assert "controller only" in " ".join(doc["doc"]["description"])
    assert set(doc["return"]) >= {"point", "progress", "skipped_points", "failed_points", "winners", "files"}
    # a result's "failed"/"skipped" keys would make Ansible read the task itself as failed or skipped
    assert not {"failed", "skipped"} & set(doc["return"])
