"""The sglang_router role's modules document themselves: ansible-doc renders each, the documented options are exactly
the argument spec the module enforces, and the keys are no_log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sglang_router_worker
import sglang_worker_drain

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"
MODULES = {"sglang_router_worker": sglang_router_worker, "sglang_worker_drain": sglang_worker_drain}


def _doc(name: str) -> dict:
    done = subprocess.run([str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), name], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[name]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_ansible_doc_renders_the_module_with_the_options_it_enforces(name):
    doc = _doc(name)
    assert set(doc["doc"]["options"]) == set(MODULES[name].ARGUMENT_SPEC)
    assert doc["examples"].strip()
    assert doc["return"]


@pytest.mark.parametrize(("name", "option"), [("sglang_router_worker", "api_key"),
                                              ("sglang_router_worker", "worker_api_key"),
                                              ("sglang_worker_drain", "api_key")])
def test_keys_are_no_log(name, option):
    assert MODULES[name].ARGUMENT_SPEC[option].get("no_log") is True
