"""Bytecode in the module payloads ansible sends to the hosts, so a host whose Python is the controller's minor
version runs a module without compiling its sources first.

A payload is a zip of the module and every module_util it imports (~60 files, ~450 kB of source for a builtin
module); the host runs it with the zip on sys.path. zipimport never writes bytecode, so every module run compiles
all of it again: ~65 ms of the ~170 ms of CPU a builtin module's run takes on a Debian 12 test host. A
``name.pyc`` beside ``name.py`` in the zip is used instead of the source when its magic number is the running
Python's; on any other Python zipimport falls back to the source, so a payload with bytecode runs everywhere the
payload without it ran. The bytecode is the unchecked hash-based kind (PEP 552): it is read without comparing
timestamps, and it cannot go stale, as it travels in the same zip as the source it was compiled from.

A file that raises a deprecation keeps its source only. ansible names the owner of a deprecation raised without an
explicit one (a module's ``module.deprecate(...)``, a deprecated core API) from the calling frame's file name, matched
against where the payload's ``ansible`` package sits on the host: code compiled here cannot know that path (a
random temporary directory), so from bytecode the warning would lose its owner and version ("will be removed in the
future" instead of "from ansible-core version 2.21"). Those files (a module that deprecates, basic.py, a few of
common/: ~150 of a builtin module's ~450 kB) are compiled on the host as before.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib.util
import io
import marshal
import re
import zipfile

# PEP 552's flags word: bit 0 says the .pyc is keyed by its source's hash, bit 1 (clear) that it is not checked.
UNCHECKED_HASH_FLAGS = (0b01).to_bytes(4, "little")


def bytecode_for(source: bytes, name: str) -> bytes | None:
    """``source`` compiled by this Python as an unchecked hash-based .pyc, or None where it does not compile here
    (a module_util written for a newer Python than the controller's: the host compiles it, as without this). Its
    frames name the file by its place in the payload (``ansible/module_utils/common/...``): only the host knows the
    payload's own path."""
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return importlib.util.MAGIC_NUMBER + UNCHECKED_HASH_FLAGS + importlib.util.source_hash(source) + marshal.dumps(code)


# A call of ansible's deprecate(), AnsibleModule.deprecate() or deprecate_value(), under any prefix ("_deprecate(").
RAISES_A_DEPRECATION = re.compile(rb"deprecate(?:_value)?\s*\(")


def with_bytecode(payload: bytes) -> bytes:
    """The payload zip with a .pyc beside each .py that raises no deprecation, compressed as the .py is."""
    source_zip = zipfile.ZipFile(io.BytesIO(payload))
    out = io.BytesIO()
    with zipfile.ZipFile(out, mode="w") as target:
        for info in source_zip.infolist():
            body = source_zip.read(info)
            target.writestr(info, body)
            if not info.filename.endswith(".py") or RAISES_A_DEPRECATION.search(body):
                continue
            pyc = bytecode_for(body, info.filename)
            if pyc is None:
                continue
            pyc_info = zipfile.ZipInfo(f"{info.filename}c", date_time=info.date_time)
            pyc_info.compress_type = info.compress_type
            target.writestr(pyc_info, pyc)
    return out.getvalue()


def build_payloads_with_bytecode(cached_module_class: type | None) -> bool:
    """Make each payload ansible builds carry its bytecode: ``cached_module_class`` is the record ansible makes of a
    payload it built (``ansible.executor.module_common._CachedModule``: the zip base64-encoded in ``zip_data``; built
    once, then stored and reloaded without being made again). False where this ansible has no such record: its
    payloads then go as it builds them."""
    init = getattr(cached_module_class, "__init__", None)
    if not dataclasses.is_dataclass(cached_module_class) or "zip_data" not in {
        field.name for field in dataclasses.fields(cached_module_class)
    }:
        return False
    if getattr(init, "adds_bytecode", False):
        return True

    def init_with_bytecode(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        payload = with_bytecode(base64.b64decode(self.zip_data))
        object.__setattr__(self, "zip_data", base64.b64encode(payload))  # the record is a frozen dataclass

    init_with_bytecode.adds_bytecode = True  # type: ignore[attr-defined]
    cached_module_class.__init__ = init_with_bytecode  # type: ignore[misc]
    return True
