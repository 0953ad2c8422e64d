"""The benchmark reads the server's API key from the release's SGLang config on the host, never from its arguments."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.bench_client import BenchError
from ansible.module_utils.specgate.gate.bench_key import api_key_from_config, read_api_key

pytestmark = pytest.mark.host


def test_the_key_is_the_configs_api_key(tmp_path):
    launch = tmp_path / "launch.yaml"
    launch.write_text("model-path: /models/target\nport: 30000\napi-key: s3cret-key\n")
    assert read_api_key(str(launch)) == "s3cret-key"


@pytest.mark.parametrize("text", ["model-path: /m\n", "api-key: ''\n", "- a list\n", "api-key: 12345\n"])
def test_a_config_without_a_key_names_the_file_and_the_fix(text):
    with pytest.raises(BenchError, match=r"launch\.yaml holds no api-key: .*sglang_service_api_key"):
        api_key_from_config(text, "/opt/specgate/releases/r1/launch.yaml")


def test_a_file_that_is_not_yaml_or_cannot_be_read_is_said(tmp_path):
    with pytest.raises(BenchError, match="is not YAML"):
        api_key_from_config("api-key: [unclosed\n", "launch.yaml")
    with pytest.raises(BenchError, match=r"cannot read the server's API key from .*missing\.yaml: No such file"):
        read_api_key(str(tmp_path / "missing.yaml"))
