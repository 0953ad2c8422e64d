"""Fixtures shared by the resolver tests (helpers live in resolver_cases.py)."""

from __future__ import annotations

import pytest
from resolver_cases import write_model_dirs


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_model_dirs(tmp_path_factory.mktemp("models"))
