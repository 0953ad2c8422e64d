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
import yaml

from integration.preflight_runner import validate_on_ct200_with_local_models

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# The stages deploy.yml validates before the first change, in its order.
STAGES = ["preflight", "cuda_toolkit", "sglang_env", "model_weights", "sglang_service", "spec_gate"]
# Settings whose default is null (so not in the defaults-as-strings run) and that users set: the cases.
AS_USERS_SET = {"spec_gate_max_regression": "0.2", "spec_gate_min_accept_length": "3.5"}


def typed_defaults_as_strings() -> dict[str, str]:
    """Every int/float/bool option of the stages' main entry points with a literal default, as a `-e` string."""
    found = {}
    for stage in STAGES:
        spec = yaml.safe_load((ROOT / "roles" / stage / "meta" / "argument_specs.yml").read_text())
        for name, option in (spec["argument_specs"]["main"].get("options") or {}).items():
            kind, default = option.get("type"), option.get("default")
            if kind in ("int", "float", "bool") and default is not None and "{{" not in str(default):
                found[name] = str(default).lower() if kind == "bool" else str(default)
    return found


def validate_only(tmp_path: Path, settings: dict[str, Any]):
    # The fixture target holds 4096 positions: ct200's 128k context would be refused by the target's limits.
    return validate_on_ct200_with_local_models(tmp_path, {"sglang_service_context_length": None, **settings})


def test_the_typed_settings_are_found():
    settings = typed_defaults_as_strings()
    assert len(settings) >= 40
    assert {"sglang_service_trial", "sglang_service_port", "spec_gate_confidence"} <= set(settings)


def test_every_typed_setting_passed_as_a_command_line_string_is_accepted(tmp_path: Path) -> None:
    run = validate_only(tmp_path, {**typed_defaults_as_strings(), **AS_USERS_SET})
    failures = [(e["event_data"]["task"], e["event_data"]["res"].get("msg")) for e in run.events
                if e["event"] == "runner_on_failed"]  # fmt: skip
    assert run.status == "successful", failures
    validated = {e["event_data"].get("role") for e in run.events if e["event"] == "runner_on_ok"
                 and e["event_data"].get("task_path", "").split(":")[0].endswith("/validate.yml")}  # fmt: skip
    assert set(STAGES) - {"preflight"} <= validated, validated


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [("sglang_service_port", "abc", "int"), ("spec_gate_confidence", "high", "float"),
     ("sglang_service_trial", "maybe", "bool")],
)
def test_a_wrong_type_is_refused_naming_the_variable_and_the_type(tmp_path: Path, name, value, kind) -> None:
    run = validate_only(tmp_path, {name: value})
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert failures, f"{name}={value!r} was accepted"
    message = str(failures[0]["res"].get("msg"))
    assert name in message, message
    assert kind in message, message
    assert run.stats["changed"] == {}
