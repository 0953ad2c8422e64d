"""Weight prefetch: which files are read, the memory budget that stops it, and that it reads everything."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.service.page_cache import (
    mem_available_bytes,
    plan_prefetch,
    prefetch,
    read_into_cache,
    weight_files,
)

pytestmark = pytest.mark.host


def _make_model(root, files):
    for name, size in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\1" * size)


def test_weight_files_finds_weights_recursively_and_skips_the_rest(tmp_path):
    _make_model(
        tmp_path / "target",
        {"model-00001.safetensors": 10, "sub/model-00002.safetensors": 20, "config.json": 5, "tokenizer.model": 7},
    )
    _make_model(tmp_path / "drafter", {"model.safetensors": 3})
    found = weight_files([str(tmp_path / "target"), str(tmp_path / "drafter")])
    assert [p.name for p in found] == ["model.safetensors", "model-00001.safetensors", "model-00002.safetensors"]


def test_weight_files_names_a_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        weight_files([str(tmp_path / "does-not-exist")])


def test_plan_refuses_what_does_not_fit_in_the_memory_share(tmp_path):
    _make_model(tmp_path, {"a.safetensors": 600, "b.safetensors": 500})
    files = weight_files([str(tmp_path)])
    assert plan_prefetch(files, available_bytes=2000, max_fraction=0.5).fits is False
    assert plan_prefetch(files, available_bytes=2200, max_fraction=0.5).fits is True


def test_prefetch_reads_every_byte_with_a_small_reused_buffer(tmp_path):
    _make_model(tmp_path, {"a.safetensors": 100_000, "b.safetensors": 33})
    files = weight_files([str(tmp_path)])
    result = prefetch(files, chunk=4096)
    assert result.files == 2
    assert result.bytes_read == 100_033
    assert read_into_cache(files[0], chunk=7) == 100_000


def test_mem_available_is_read_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   1000 kB\n")
    assert mem_available_bytes(str(meminfo)) == 1_024_000
    meminfo.write_text("MemTotal: 1 kB\n")
    with pytest.raises(RuntimeError, match="no MemAvailable"):
        mem_available_bytes(str(meminfo))
