"""Release naming and the identity a release must report: filter_plugins/sglang_release.py."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from sglang_release import sglang_identity, sglang_public_config, sglang_release_id, sglang_release_label


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


def test_identity_prefers_the_resolved_value_and_skips_ignored_keys():
    public = {"model-path": "/m", "speculative-algorithm": "NEXTN", "context-length": "128k", "random-seed": 3}
    resolved = {"speculative_algorithm": "EAGLE", "context_length": 131072, "model_path": "/m"}
    identity = sglang_identity(public, resolved, ["random-seed"])
    assert identity == {"model_path": "/m", "speculative_algorithm": "EAGLE", "context_length": 131072}
    assert sglang_identity({"port": 31000}, None) == {"port": 31000}
