"""Every int, float and bool setting is accepted as users pass it on the command line (`-e name=value`, a string),
and a value of the wrong type is refused naming that one variable and its type, before anything changes.

Found by trying it: `-e sglang_service_trial=false` was refused as "sglang_service_trial and
sglang_service_promote_on_success are both true" (a bare string is truthy in a condition), and
`-e spec_gate_max_regression=0.2` once as "Out of range".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from integration.preflight_runner import validate_on_ct200_with_local_models
from integration.test_router_refusal import fleet_with_router
from integration.typed_options import typed_defaults_as_strings

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# The stages deploy.yml validates before the first change, in its order, and the entry point that validates each;
# the rollout's plan and the router's check come first, in plays of their own. spec_sweep's options are sweep.yml's
# (tests/integration/test_spec_sweep_validation.py).
ENTRIES = [("fleet_rollout", "plan"), ("sglang_router", "validate"), ("preflight", "main"), ("cuda_toolkit", "main"),
           ("sglang_env", "main"), ("model_weights", "main"), ("sglang_service", "main"), ("spec_gate", "main")]
# Settings whose default is null (so not in the defaults-as-strings run) and that users set: the cases.
AS_USERS_SET = {"spec_gate_max_regression": "0.2", "spec_gate_min_accept_length": "3.5",
               # One replica behind the router: taking it out leaves none (the default floor 1 refuses it).
               "sglang_router_min_healthy_workers": "0"}


def every_typed_default_as_a_string() -> dict[str, str]:
    found: dict[str, str] = {}
    for role, entry in ENTRIES:
        found.update(typed_defaults_as_strings(role, entry))
    return found


def validate_only(tmp_path: Path, settings: dict[str, Any]):
    """deploy.yml's validation over ct200 and a router host lb1 (both this machine): every stage's, the rollout's
    plan and the router's check. The fixture target holds 4096 positions: ct200's 128k context would be refused by
    the target's limits."""
    return validate_on_ct200_with_local_models(tmp_path, {"sglang_service_context_length": None, **settings},
                                               inventory=fleet_with_router(tmp_path))


def test_the_typed_settings_are_found():
    settings = every_typed_default_as_a_string()
    assert len(settings) >= 60
    assert {"sglang_service_trial", "sglang_service_port", "spec_gate_confidence", "fleet_rollout_bake_seconds",
            "fleet_rollout_pause_between_batches", "sglang_router_port", "sglang_router_drain_timeout"} <= set(settings)


def test_every_typed_setting_passed_as_a_command_line_string_is_accepted(tmp_path: Path) -> None:
    run = validate_only(tmp_path, {**every_typed_default_as_a_string(), **AS_USERS_SET})
    failures = [(e["event_data"]["task"], e["event_data"]["res"].get("msg")) for e in run.events
                if e["event"] == "runner_on_failed"]  # fmt: skip
    assert run.status == "successful", failures
    validated = {(e["event_data"].get("role"), e["event_data"].get("host")) for e in run.events
                 if e["event"] == "runner_on_ok" and e["event_data"].get("task", "").startswith("Validating arguments")}
    assert {(role, "lb1" if role == "sglang_router" else "ct200") for role, _ in ENTRIES} <= validated, validated


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [("sglang_service_port", "abc", "int"), ("spec_gate_confidence", "high", "float"),
     ("sglang_service_trial", "maybe", "bool"), ("fleet_rollout_bake_seconds", "soon", "int"),
     ("fleet_rollout_pause_between_batches", "perhaps", "bool"), ("sglang_router_drain_timeout", "long", "int")],
)
def test_a_wrong_type_is_refused_naming_the_variable_and_the_type(tmp_path: Path, name, value, kind) -> None:
    run = validate_only(tmp_path, {name: value})
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert failures, f"{name}={value!r} was accepted"
    message = str(failures[0]["res"].get("msg"))
    assert name in message, message
    assert kind in message, message
    assert run.stats["changed"] == {}
