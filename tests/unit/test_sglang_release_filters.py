"""Release naming and the identity a release must report: filter_plugins/sglang_release.py."""

from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from sglang_release import (
    sglang_engine_record,
    sglang_identity,
    sglang_launch_yaml,
    sglang_public_config,
    sglang_release_content,
    sglang_release_id,
    sglang_release_label,
    sglang_release_label_of,
)


def test_label_spells_the_speculative_settings_like_the_field_notes():
    deployment = {"algorithm": "DDTREE", "block_size": 16, "ddtree_budget": 32, "ddtree_topk": 8, "tp_size": 8}
    assert sglang_release_label(deployment) == "ddtree-bs16-b32-t8"
    assert sglang_release_label({"algorithm": "none", "block_size": None}) == "nospec"
    assert sglang_release_label({"algorithm": "DFLASH", "block_size": 8, "draft_window": 2048}) == "dflash-bs8-w2048"


def test_a_user_label_wins_but_must_be_a_safe_directory_name():
    assert sglang_release_label({"algorithm": "DFLASH"}, "short-ctx.v2") == "short-ctx.v2"
    with pytest.raises(AnsibleFilterError, match="sglang_service_release_label"):
        sglang_release_label({"algorithm": "DFLASH"}, "../etc")


def test_release_id_changes_with_content_and_not_with_key_order():
    one = sglang_release_id({"server": {"a": 1, "b": 2}, "env": {}}, "nospec")
    same = sglang_release_id({"env": {}, "server": {"b": 2, "a": 1}}, "nospec")
    other = sglang_release_id({"server": {"a": 1, "b": 3}, "env": {}}, "nospec")
    assert one == same
    assert one != other
    assert one.startswith("nospec-")
    assert len(one) == len("nospec-") + 10


def test_public_config_drops_the_api_keys_in_either_spelling():
    config = {"model-path": "/m", "api-key": "secret", "admin_api_key": "secret2"}
    assert sglang_public_config(config, ["api-key", "admin-api-key"]) == {"model-path": "/m"}


def test_the_launch_file_is_the_public_config_plus_the_key_and_reads_back_to_the_same_bytes():
    public = {"model-path": "/m", "context-length": "128k", "port": 31000, "enable-metrics": True,
              "speculative-dflash-block-size": 8}
    launch = sglang_launch_yaml(public, "sk-rotated-0001")
    assert yaml.safe_load(launch) == {**public, "api-key": "sk-rotated-0001"}
    assert launch.splitlines()[0] == "model-path: /m"  # the release's order, the key last
    # A rollback rebuilds known-good's from its server.yaml as read back from the host: the same bytes for the same key.
    assert sglang_launch_yaml(yaml.safe_load(yaml.safe_dump(public, sort_keys=False)), "sk-rotated-0001") == launch
    assert sglang_launch_yaml(public, "sk-rotated-0002") != launch
    assert "api-key" not in sglang_launch_yaml(public, None)


def test_identity_prefers_the_resolved_value_and_skips_ignored_keys():
    public = {"model-path": "/m", "speculative-algorithm": "NEXTN", "context-length": "128k", "random-seed": 3}
    resolved = {"speculative_algorithm": "EAGLE", "context_length": 131072, "model_path": "/m"}
    identity = sglang_identity(public, resolved, ["random-seed"])
    assert identity == {"model_path": "/m", "speculative_algorithm": "EAGLE", "context_length": 131072}
    assert sglang_identity({"port": 31000}, None) == {"port": 31000}


SGLANG_ENV = {
    "venv": "/opt/specgate/venv",
    "versions": {"sglang": "0.5.23"},
    "installed": {"sglang": "0.5.23", "flashinfer-python": "0.7.2", "sglang-kernel": "0.4.10"},
    "patches": {},
    "fingerprint": "0123456789abcdef",
}
CUDA = {
    "version": "13.0",
    "env_file": "/opt/specgate/cuda/cuda.env",
    "installed": {},
    "fingerprint": "fedcba9876543210",
}


def release_id_for(sglang_env=SGLANG_ENV, cuda=CUDA) -> str:
    content = sglang_release_content(
        {"model-path": "/models/t"},
        {"PATH": "/usr/bin"},
        "sglang.launch_server",
        "0.5.23",
        sglang_env=sglang_env,
        cuda=cuda,
    )
    return sglang_release_id(content, "nospec")


def test_release_id_covers_what_the_engine_loads_venv_patches_and_cuda():
    """A bumped flashinfer-python, a re-applied patch or a new CUDA env leaves the config alone but changes
    the fingerprints sglang_env and cuda_toolkit publish: each must be a new release (restart, re-gate)."""
    base = release_id_for()
    assert release_id_for() == base
    assert release_id_for({**SGLANG_ENV, "fingerprint": "1111111111111111"}) != base
    assert release_id_for(cuda={**CUDA, "fingerprint": "2222222222222222"}) != base
    # Hosts provisioned without the CUDA stage (or facts without a fingerprint) still get a stable id.
    assert release_id_for(cuda={}) == release_id_for(cuda=None)
    # Display-only fields do not move the id: the fingerprint already covers them.
    assert release_id_for({**SGLANG_ENV, "installed": {}}) == base


def test_engine_record_shows_what_went_into_the_fingerprints():
    record = sglang_engine_record({**SGLANG_ENV, "patches": {"ddtree": "1" * 64}}, CUDA)
    assert record["venv"]["fingerprint"] == "0123456789abcdef"
    assert record["venv"]["installed"]["flashinfer-python"] == "0.7.2"
    assert record["venv"]["patches"] == {"ddtree": "1" * 64}
    assert record["cuda"] == {
        "version": "13.0",
        "env_file": "/opt/specgate/cuda/cuda.env",
        "fingerprint": "fedcba9876543210",
        "installed": {},
    }
    assert sglang_engine_record(SGLANG_ENV, None)["cuda"]["fingerprint"] == ""


@pytest.mark.parametrize("label", ["dflash-bs8", "nospec", "x-0123456789", "ddtree-bs16-b32-t8"])
def test_the_label_of_a_release_id_is_the_label_it_was_made_from(label):
    release_id = sglang_release_id({"server": {"speculative-algorithm": "DFLASH"}}, label)
    assert release_id != label
    assert sglang_release_label_of(release_id) == label


def test_an_id_without_a_digest_is_its_own_label():
    assert sglang_release_label_of("hand-made") == "hand-made"
