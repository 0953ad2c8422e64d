"""The bytecode added to a module payload (specgate.project's plugin_utils/ansiballz_bytecode.py): a Python of the
controller's version imports the payload's modules from it, any other Python from their sources, and a source that
raises a deprecation or that this Python cannot compile travels without it. Each payload is imported by a fresh
interpreter, as a host runs one."""

from __future__ import annotations

import base64
import dataclasses
import io
import subprocess
import sys
import zipfile
from pathlib import Path

from ansible_collections.specgate.project.plugins.plugin_utils.ansiballz_bytecode import (
    build_payloads_with_bytecode,
    with_bytecode,
)

SOURCES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "VALUE = 6 * 7\n\n\ndef double(x):\n    return 2 * x\n",
}
IMPORT = (
    "import os, sys; sys.path.insert(0, sys.argv[1]); import pkg.mod; "
    "print(pkg.mod.VALUE, pkg.mod.double(4), os.path.splitext(pkg.mod.__file__)[1])"
)


def payload(sources: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, mode="w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, text in sources.items():
            zipped.writestr(name, text)
    return out.getvalue()


def imported(tmp_path: Path, zipped: bytes) -> str:
    path = tmp_path / "payload.zip"
    path.write_bytes(zipped)
    run = subprocess.run([sys.executable, "-I", "-c", IMPORT, str(path)], capture_output=True, text=True, check=True)
    return run.stdout.strip()


def test_this_python_imports_the_payloads_modules_from_their_bytecode(tmp_path):
    zipped = with_bytecode(payload(SOURCES))
    names = zipfile.ZipFile(io.BytesIO(zipped)).namelist()
    assert sorted(names) == sorted([*SOURCES, *(f"{name}c" for name in SOURCES)])
    assert imported(tmp_path, zipped) == "42 8 .pyc"
    assert imported(tmp_path, payload(SOURCES)) == "42 8 .py"  # without it: the sources, compiled at each import


def test_a_python_of_another_version_imports_the_same_payload_from_its_sources(tmp_path):
    """Another Python's magic number in the bytecode, as a host of another minor version sees it."""
    source = zipfile.ZipFile(io.BytesIO(with_bytecode(payload(SOURCES))))
    out = io.BytesIO()
    with zipfile.ZipFile(out, mode="w") as other:
        for info in source.infolist():
            body = source.read(info)
            other.writestr(info, b"\x00\x00\r\n" + body[4:] if info.filename.endswith(".pyc") else body)
    assert imported(tmp_path, out.getvalue()) == "42 8 .py"


def test_a_source_that_raises_a_deprecation_travels_without_bytecode():
    """ansible names such a deprecation's owner from the calling frame's file, a path only the host knows."""
    sources = {
        **SOURCES,
        "pkg/old.py": "def f(module):\n    module.deprecate('old', version='9.0')\n",
        "pkg/shim.py": "from x import deprecate as _deprecate\n_deprecate(msg='m')\n",
        "pkg/value.py": "v = deprecate_value(1, 'old')\n",
        "pkg/talks.py": "# deprecation is a word here, never a call\nDEPRECATED = True\n",
    }
    names = zipfile.ZipFile(io.BytesIO(with_bytecode(payload(sources)))).namelist()
    assert {"pkg/old.pyc", "pkg/shim.pyc", "pkg/value.pyc"}.isdisjoint(names)
    assert {"pkg/old.py", "pkg/shim.py", "pkg/value.py", "pkg/talks.pyc", "pkg/mod.pyc"} <= set(names)


def test_a_source_this_python_cannot_compile_travels_without_bytecode(tmp_path):
    sources = {**SOURCES, "pkg/newer.py": "match = = 1\n"}
    names = zipfile.ZipFile(io.BytesIO(with_bytecode(payload(sources)))).namelist()
    assert "pkg/newer.py" in names
    assert "pkg/newer.pyc" not in names
    assert "pkg/mod.pyc" in names


@dataclasses.dataclass(kw_only=True, slots=True, frozen=True)
class Record:
    """Shaped as ansible's record of a built payload (ansible.executor.module_common._CachedModule)."""

    zip_data: bytes
    metadata: str


def test_each_payload_record_made_after_the_change_carries_its_bytecode_and_the_change_is_made_once(tmp_path):
    class Built(Record):
        pass

    assert build_payloads_with_bytecode(Built)
    assert build_payloads_with_bytecode(Built)  # a second playbook start in the same process: no second layer
    record = Built(zip_data=base64.b64encode(payload(SOURCES)), metadata="m")
    assert record.metadata == "m"
    assert imported(tmp_path, base64.b64decode(record.zip_data)) == "42 8 .pyc"
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(record.zip_data))).namelist()
    assert names.count("pkg/mod.pyc") == 1


def test_an_ansible_without_that_record_builds_its_payloads_as_it_does():
    @dataclasses.dataclass(frozen=True)
    class Elsewhere:
        data: bytes

    assert not build_payloads_with_bytecode(None)
    assert not build_payloads_with_bytecode(Elsewhere)
    assert Elsewhere(data=b"x").data == b"x"
