"""Every module in library/ documents itself: ansible-doc renders it, and the options it documents are exactly the
argument spec it enforces, suboptions included. The spec is the one the module hands AnsibleModule when it runs (caught
at construction), so a module whose spec is written inline is compared as fully as one that names ARGUMENT_SPEC."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"
MODULES = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
# Action plugins keep their DOCUMENTATION in a same-named file in library/ (Ansible's convention) and have no
# AnsibleModule of their own: their options are compared with the action's _VALID_ARGS below.
ACTIONS = sorted(p.stem for p in (ROOT / "action_plugins").glob("*.py"))


@pytest.fixture(scope="module")
def rendered() -> dict[str, Any]:
    """One ansible-doc call over all of library/: a YAML slip in any DOCUMENTATION fails here, not for a user."""
    done = subprocess.run([str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), *MODULES],
                          capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class _Constructed(Exception):
    """Raised by the stand-in AnsibleModule: the module got as far as declaring its arguments."""


def enforced_spec(module: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keyword arguments (argument_spec, supports_check_mode, ...) the module's main() passes to AnsibleModule."""
    loaded = importlib.import_module(module)
    captured: dict[str, Any] = {}

    def stand_in(*args: Any, **kwargs: Any) -> None:
        captured.update(kwargs)
        if args:
            captured["argument_spec"] = args[0]
        raise _Constructed

    monkeypatch.setattr(loaded, "AnsibleModule", stand_in)
    with pytest.raises(_Constructed):
        loaded.main()
    return captured


def _documented(options: dict) -> dict:
    """ansible-doc's options as {name: nested suboptions or None}."""
    return {name: _documented(spec["suboptions"]) if "suboptions" in spec else None for name, spec in options.items()}


def _specified(spec: dict) -> dict:
    return {name: _specified(arg["options"]) if "options" in arg else None for name, arg in spec.items()}


def test_every_module_in_library_is_rendered(rendered):
    assert sorted(rendered) == MODULES


@pytest.mark.parametrize("module", sorted(set(MODULES) - set(ACTIONS)))
def test_a_module_documents_exactly_the_argument_spec_it_enforces(module, rendered, monkeypatch):
    doc = rendered[module]
    assert doc["doc"]["short_description"]
    assert doc["examples"].strip()
    enforced = enforced_spec(module, monkeypatch)
    assert _documented(doc["doc"].get("options") or {}) == _specified(enforced["argument_spec"])
    # The style every module follows: --check predicts instead of failing.
    assert enforced.get("supports_check_mode") is True, f"{module} does not support check mode"


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_documents_exactly_the_arguments_it_accepts(action, rendered):
    assert action in rendered, f"action {action} has no DOCUMENTATION file in library/"
    spec = importlib.util.spec_from_file_location(f"specgate_action_{action}", ROOT / "action_plugins" / f"{action}.py")
    assert spec is not None
    assert spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    declared = set(loaded.ActionModule._VALID_ARGS)
    assert set(rendered[action]["doc"].get("options") or {}) == declared


# Secrets a module takes: masked in every log line Ansible writes. A nested no_log value is masked only verbatim,
# so sglang_service_files' secrets are no_log as a whole dict (see the option's description).
SECRET_OPTIONS = [
    ("sglang_service_start", "api_key"),
    ("sglang_service_start", "redact"),
    ("sglang_service_files", "secrets"),
    ("sglang_router_worker", "api_key"),
    ("sglang_router_worker", "worker_api_key"),
    ("sglang_worker_drain", "api_key"),
]


@pytest.mark.parametrize(("module", "option"), SECRET_OPTIONS)
def test_secret_options_are_no_log(module, option, monkeypatch):
    assert enforced_spec(module, monkeypatch)["argument_spec"][option].get("no_log") is True
