"""The sweep's controller-only module documents itself: ansible-doc renders it, the documented options are exactly
the argument spec it enforces, and it says it runs on the controller."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import spec_sweep_state

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"


def test_ansible_doc_renders_the_module_with_the_options_it_enforces(monkeypatch):
    done = subprocess.run([str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), "spec_sweep_state"],
                          capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)["spec_sweep_state"]
    captured = {}

    class Stop(Exception):
        pass

    def fake_module(argument_spec, supports_check_mode):
        captured.update(argument_spec=argument_spec, check_mode=supports_check_mode)
        raise Stop

    monkeypatch.setattr(spec_sweep_state, "AnsibleModule", fake_module)
    with pytest.raises(Stop):
        spec_sweep_state.main()
    assert set(doc["doc"]["options"]) == set(captured["argument_spec"])
    assert captured["check_mode"] is True
    assert "controller only" in " ".join(doc["doc"]["description"])
    assert doc["examples"].strip()
    assert set(doc["return"]) >= {"point", "progress", "skipped_points", "failed_points", "winners", "files"}
    # a result's "failed"/"skipped" keys would make Ansible read the task itself as failed or skipped
    assert not {"failed", "skipped"} & set(doc["return"])
