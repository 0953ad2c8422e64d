"""A secret given with -e is found in ansible-playbook's arguments; vault, -e @file and short values are not."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.secret_exposure import exposure_warning, secrets_on_command_line

pytestmark = pytest.mark.host

TOKEN = "hf_abcdefghijklmnop"


@pytest.mark.parametrize("argv", [
    ["ansible-playbook", "deploy.yml", "-e", f"model_weights_hf_token={TOKEN}"],
    ["ansible-playbook", "deploy.yml", f"--extra-vars={{\"model_weights_hf_token\": \"{TOKEN}\"}}"],
])
def test_a_token_on_the_command_line_is_found(argv):
    secrets = {"model_weights_hf_token": TOKEN, "sglang_service_api_key": "other-key-1"}
    assert secrets_on_command_line(argv, secrets) == ["model_weights_hf_token"]


def test_vault_a_vars_file_or_a_short_value_is_not_reported():
    argv = ["ansible-playbook", "deploy.yml", "-e", "@secrets.yml", "-e", "spec_gate_runs=3"]
    assert secrets_on_command_line(argv, {"model_weights_hf_token": TOKEN}) == []
    assert secrets_on_command_line(["-e", "sglang_service_api_key=3"], {"sglang_service_api_key": "3"}) == []
    assert secrets_on_command_line(["-e", "x=1"], {"sglang_service_api_key": None}) == []


def test_the_warning_names_the_variable_and_points_to_vault():
    message = exposure_warning(["model_weights_hf_token"])
    assert message.startswith("model_weights_hf_token came on the command line (-e)")
    assert "vault" in message
    assert "process list" in message
