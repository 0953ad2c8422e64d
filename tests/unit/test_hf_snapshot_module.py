"""hf_snapshot as a module on a pre-staged snapshot: no hub, nothing written, and it runs on every host Python
(it stamps the manifest time with an aware UTC datetime, which 3.10 spells datetime.timezone.utc)."""

from __future__ import annotations

import json

import hf_snapshot as module  # library/hf_snapshot.py (tests/conftest.py puts library/ on sys.path)
import pytest
from ansible.module_utils.testing import patch_module_args

pytestmark = pytest.mark.host


def test_a_pre_staged_snapshot_is_checked_without_the_hub(tmp_path, capsys):
    staged = tmp_path / "target"
    staged.mkdir()
    (staged / "config.json").write_text("{}")
    args = {"snapshots": [{"name": "target", "local_path": str(staged)}], "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    result = json.loads(capsys.readouterr().out)
    assert not result.get("failed"), result["msg"]
    assert [s["name"] for s in result["snapshots"]] == ["target"]
