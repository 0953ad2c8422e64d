"""Callback: keep the modules ansible builds for the hosts (AnsiballZ payloads) from one run to the next.

Before a Python module runs on a host, the controller packs it with every module_utils file it imports: each
import is found by parsing the source (ansible's recursive_finder), 80-180 ms of controller CPU per module here, the
same ~50 files of ansible's own module_utils every time. ansible keeps the result only for one run (in that run's
local temp directory), so every ansible-playbook run packs every module it uses again: ~5 s of CPU for a deploy that
uses ~40 modules, paid again by each run of a sweep, a rollout or a test.

At playbook start this points the run's cache at a directory shared between runs (under the project's
.cache/ansiballz/, whatever local temp directory each run has: the tests give each run its own), named by a digest
of everything a payload is built from: ansible's and Python's versions, and the name, size and modification time of
every file under every path a module or module_util can come from (ansible's own, ansible.cfg's library and
module_utils, each collection's plugins/modules and plugins/module_utils, each role's library and module_utils, the
playbook's). A change to any of them is another digest, so a payload built from older sources is never reused.
ansible's own locking and atomic writes (module_common._find_module_utils) already make the cache safe for
concurrent writers: every worker of one run is one. Directories no run used for a week are removed.

Each payload ansible builds also carries the bytecode of its sources for the controller's Python
(plugins/plugin_utils/ansiballz_bytecode.py): a host whose Python is the same minor version runs the module without
compiling ~450 kB of module_utils first; any other host compiles them as before.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import ansible
from ansible import constants as C
from ansible.executor import module_common
from ansible.plugins.callback import CallbackBase
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible_collections.specgate.project.plugins.plugin_utils import ansiballz_bytecode
from ansible_collections.specgate.project.plugins.vars.project_dir import PROJECT_DIR

DOCUMENTATION = r"""
name: ansiballz_cache
type: aggregate
short_description: Reuse the module payloads ansible builds for the hosts from one run to the next
description:
  - ansible packs each module with the module_utils it imports once per run. This callback points that cache at a
    directory shared between runs, named by a digest of ansible's and Python's versions and of the name, size and
    modification time of every file a module or module_util can come from, so a later run reuses the payloads while
    nothing they are built from changed.
requirements:
  - enable in ansible.cfg (callbacks_enabled specgate.project.ansiballz_cache)
options:
  cache_dir:
    description: The directory that holds one directory of payloads per digest; unset, the project's .cache/ansiballz.
    type: path
    env:
      - name: SPECGATE_ANSIBALLZ_CACHE
    ini:
      - section: callback_ansiballz_cache
        key: cache_dir
"""

PROJECT_CACHE = Path(PROJECT_DIR) / ".cache" / "ansiballz"

PREFIX = "ansiballz-"
# A source root like the modules': a payload built before what adds its bytecode changed is never reused.
PAYLOAD_BUILDER_DIR = Path(ansiballz_bytecode.__file__).parent
UNUSED_FOR_S = 7 * 24 * 3600


def source_roots(playbook_dir: str | None) -> list[Path]:
    """Every directory a module or a module_util of this run can be read from, in a fixed order."""
    package = Path(ansible.__file__).parent
    roots = [package / "modules", package / "module_utils"]
    roots += [Path(p) for p in (*C.DEFAULT_MODULE_PATH, *C.DEFAULT_MODULE_UTILS_PATH)]
    for base in AnsibleCollectionConfig.collection_paths:
        roots += sorted(Path(base).glob("ansible_collections/*/*/plugins/modules"))
        roots += sorted(Path(base).glob("ansible_collections/*/*/plugins/module_utils"))
        roots += sorted(Path(base).glob("ansible_collections/*/*/roles/*/library"))
        roots += sorted(Path(base).glob("ansible_collections/*/*/roles/*/module_utils"))
    for base in C.DEFAULT_ROLES_PATH:
        roots += sorted(Path(base).glob("*/library")) + sorted(Path(base).glob("*/module_utils"))
    if playbook_dir:
        roots += [Path(playbook_dir) / "library", Path(playbook_dir) / "module_utils"]
    return roots


def cache_key(roots: Iterable[Path], versions: Iterable[str]) -> str:
    """A digest of the versions and of each file's path, size and modification time under the roots."""
    digest = hashlib.sha256()
    for version in versions:
        digest.update(f"{version}\0".encode())
    for root in roots:
        if not root.is_dir():  # absent: no module comes from it (each test's own playbook directory has none)
            continue
        digest.update(f"root {root}\0".encode())
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                try:
                    stat = os.stat(path)
                except OSError:  # a dangling link or a file removed meanwhile: its name still counts
                    digest.update(f"{path}\0gone\n".encode())
                    continue
                digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def shared_dir(base: Path, key: str) -> Path:
    """The directory of this digest's payloads, made when missing and marked used now. OSError where this user
    cannot write there (a checkout another account made): ansible would fail the first task whose payload is not
    there yet, so such a run keeps ansible's own per-run cache instead."""
    shared = base / f"{PREFIX}{key}"
    shared.mkdir(parents=True, exist_ok=True)
    if not os.access(shared, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "not writable by this user", str(shared))
    os.utime(shared)  # used now: kept by the clean-up of other runs
    return shared


def remove_unused(base: Path, keep: Path, now: float) -> list[Path]:
    """Remove the cache directories under base that no run used for UNUSED_FOR_S; the removed ones."""
    removed = []
    for entry in base.glob(f"{PREFIX}*"):
        try:
            unused = entry != keep and entry.is_dir() and now - entry.stat().st_mtime > UNUSED_FOR_S
        except OSError:
            continue
        if unused:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "specgate.project.ansiballz_cache"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook) -> None:
        # Both before any worker is forked: each inherits them.
        if not ansiballz_bytecode.build_payloads_with_bytecode(getattr(module_common, "_CachedModule", None)):
            self._display.vvv("specgate.project.ansiballz_cache: this ansible's payloads go without bytecode")
        # A module's Python reads its payload from stdin (pipelining), and with PYTHONUNBUFFERED set (CI runners and
        # container images often set it) it reads it one byte per read(): ~180k system calls for a builtin module,
        # more than the module's own work. Only the controller's own processes see the controller's environment (its
        # local modules: delegate_to localhost), and they report once they exit, so buffering changes nothing they
        # say. The controller itself read the variable when it started and stays unbuffered.
        os.environ.pop("PYTHONUNBUFFERED", None)
        run_tmp = Path(C.DEFAULT_LOCAL_TMP)  # this run's directory, made by ansible on first use
        run_cache = run_tmp / "ansiballz_cache"  # where module_common looks: must not exist yet
        if run_cache.exists():
            return
        key = cache_key(
            [*source_roots(getattr(playbook, "_basedir", None)), PAYLOAD_BUILDER_DIR],
            [ansible.__version__, sys.version, str(Path(ansible.__file__).parent)],
        )
        base = Path(self.get_option("cache_dir") or PROJECT_CACHE)
        try:
            shared = shared_dir(base, key)
            run_cache.symlink_to(shared, target_is_directory=True)
        except OSError as err:  # not writable here: ansible's own per-run cache, as without this callback
            self._display.vvv(f"specgate.project.ansiballz_cache: not shared ({err})")
            return
        removed = remove_unused(base, shared, time.time())
        self._display.vvv(f"specgate.project.ansiballz_cache: {shared} ({len(removed)} unused removed)")
