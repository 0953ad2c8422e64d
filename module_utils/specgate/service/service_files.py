"""Put the service's files in place in one pass: directories, a release directory, single files, removals.

Why not one ansible.builtin.copy per file: each copy costs three round trips to the host (stat, transfer,
module), about a second apiece over a container connection; a reconfigure writes a dozen files, which
alone broke the toolkit's overhead budget (10 s beyond the engine's load). Why a release is staged: a
release directory is named by the hash of its content and never rewritten, so its existence must mean it
is complete. A new one is written into a hidden sibling and renamed into place, so an interrupted deploy
leaves no half-written release for a later run to trust.

Every file is written to a temporary file in its own directory, fsynced and renamed over the old one, so a
reader (systemd, the engine) sees the old or the new content, never a torn one.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

STAGING_PREFIX = ".staging-"

# run(argv) -> (rc, stdout, stderr): AnsibleModule.run_command in the module, a plain subprocess in tests.
Runner = Callable[[list[str]], tuple[int, str, str]]


@dataclass(frozen=True)
class Ownership:
    owner: str
    group: str
    mode: int

    @classmethod
    def parse(cls, owner: str, group: str, mode: str, what: str) -> Ownership:
        try:
            bits = int(str(mode), 8)
        except ValueError:
            raise ValueError(f"{what}: mode {mode!r} is not an octal string such as '0640'") from None
        if not 0 <= bits <= 0o7777:
            raise ValueError(f"{what}: mode {mode!r} is out of range")
        return cls(owner, group, bits)

    @property
    def uid(self) -> int:
        try:
            return pwd.getpwnam(self.owner).pw_uid
        except KeyError:
            raise ValueError(f"user {self.owner!r} does not exist on the host") from None

    @property
    def gid(self) -> int:
        try:
            return grp.getgrnam(self.group).gr_gid
        except KeyError:
            raise ValueError(f"group {self.group!r} does not exist on the host") from None

    def require(self, what: str) -> None:
        """Fail before anything is written when the owner or group is missing (check mode tolerates it:
        an earlier stage creates the service user, and check mode ran none of it)."""
        try:
            self.uid, self.gid  # noqa: B018 - the lookups are the check
        except ValueError as exc:
            raise ValueError(f"{what}: {exc}") from None


@dataclass(frozen=True)
class WantedFile:
    path: Path
    content: bytes
    ownership: Ownership
    secret: bool = False
    # A command with %s for a copy of the new content (e.g. "systemd-analyze verify %s"), run before anything
    # is written; the copy keeps the file's name, which some validators read (a unit's type from its suffix).
    validate: str | None = None


@dataclass(frozen=True)
class WantedRelease:
    path: Path
    ownership: Ownership
    files: tuple[WantedFile, ...]
    absent: tuple[str, ...] = ()


@dataclass
class Outcome:
    changed_paths: list[str] = field(default_factory=list)
    release_created: bool = False
    diff: list[dict] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changed_paths)


def attribute_drift(path: Path, ownership: Ownership) -> list[str]:
    """Which of owner, group, mode of an existing path differ from what is wanted."""
    st = os.lstat(path)
    drift = []
    try:
        uid, gid = ownership.uid, ownership.gid
    except ValueError:
        return ["owner"]  # the user or group is not there yet (check mode before the user exists)
    if st.st_uid != uid:
        drift.append("owner")
    if st.st_gid != gid:
        drift.append("group")
    if stat.S_IMODE(st.st_mode) != ownership.mode:
        drift.append("mode")
    return drift


def read_existing(path: Path) -> bytes | None:
    """The file's bytes, None when it does not exist; refuses a directory or a symlink where a file belongs."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ValueError(f"{path} exists and is not a regular file; move it away and re-run")
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _shown(content: bytes | None, secret: bool) -> str:
    if content is None:
        return ""
    if secret:
        return "(secret content, not shown)\n"
    return content.decode("utf-8", errors="replace")


def diff_entry(path: Path, before: bytes | None, after: bytes, secret: bool, before_header: str = "") -> dict:
    return {
        "before_header": before_header or (str(path) if before is not None else f"{path} (absent)"),
        "after_header": str(path),
        "before": _shown(before, secret),
        "after": _shown(after, secret),
    }


def write_atomically(path: Path, content: bytes, ownership: Ownership) -> None:
    """Write content to a temporary file beside path, set owner and mode, fsync, and rename it over path."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        # Owner and mode before the content: a secret is never readable by anyone it should not be.
        os.fchown(fd, ownership.uid, ownership.gid)
        os.fchmod(fd, ownership.mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def set_attributes(path: Path, ownership: Ownership) -> None:
    os.chown(path, ownership.uid, ownership.gid, follow_symlinks=False)
    os.chmod(path, ownership.mode)


def ensure_directory(path: Path, ownership: Ownership, check: bool, outcome: Outcome) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise ValueError(f"{path} exists and is not a directory; move it away and re-run")
    if not path.exists():
        outcome.changed_paths.append(str(path))
        outcome.diff.append({"before_header": str(path), "after_header": str(path),
                             "before": "(absent)\n", "after": "(directory)\n"})  # fmt: skip
        if not check:
            path.mkdir(parents=True)
            set_attributes(path, ownership)
        return
    if attribute_drift(path, ownership):
        outcome.changed_paths.append(str(path))
        if not check:
            set_attributes(path, ownership)


def ensure_file(wanted: WantedFile, check: bool, outcome: Outcome) -> None:
    before = read_existing(wanted.path)
    if before == wanted.content and not attribute_drift(wanted.path, wanted.ownership):
        return
    outcome.changed_paths.append(str(wanted.path))
    if before != wanted.content:
        outcome.diff.append(diff_entry(wanted.path, before, wanted.content, wanted.secret))
    if check:
        return
    if before == wanted.content:
        set_attributes(wanted.path, wanted.ownership)
    else:
        if not wanted.path.parent.is_dir():
            raise ValueError(f"{wanted.path.parent} does not exist; list it under directories to create it")
        write_atomically(wanted.path, wanted.content, wanted.ownership)


def ensure_absent(path: Path, check: bool, outcome: Outcome) -> None:
    if not (path.exists() or path.is_symlink()):
        return
    if path.is_dir() and not path.is_symlink():
        raise ValueError(f"{path} is a directory; only files are removed here")
    outcome.changed_paths.append(str(path))
    outcome.diff.append({"before_header": str(path), "after_header": str(path),
                         "before": "(present)\n", "after": "(absent)\n"})  # fmt: skip
    if not check:
        path.unlink()


def _new_release_diff(release: WantedRelease) -> dict:
    """A new release in a diff: its directory and file names (the role shows the content against the
    active release's files itself, under --check or --diff)."""
    names = "".join(f"{wanted.path.name}\n" for wanted in release.files)
    return {"before_header": f"{release.path} (absent)", "after_header": str(release.path),
            "before": "", "after": names}  # fmt: skip


def stage_release(release: WantedRelease) -> None:
    """Write every file of a new release into a hidden sibling directory, then rename it into place."""
    parent = release.path.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f"{STAGING_PREFIX}{release.path.name}-"))
    try:
        for wanted in release.files:
            write_atomically(staging / wanted.path.name, wanted.content, wanted.ownership)
        set_attributes(staging, release.ownership)
        os.rename(staging, release.path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def ensure_release(release: WantedRelease, check: bool, outcome: Outcome) -> None:
    for wanted in release.files:
        if wanted.path.parent != release.path:
            raise ValueError(f"release file {wanted.path} is not directly inside {release.path}")
    if release.path.is_symlink() or (release.path.exists() and not release.path.is_dir()):
        raise ValueError(f"{release.path} exists and is not a directory; move it away and re-run")
    if not release.path.exists():
        outcome.release_created = True
        outcome.changed_paths.append(str(release.path))
        outcome.diff.append(_new_release_diff(release))
        if not check:
            stage_release(release)
        return
    # An existing release holds the same public content (its name is the hash); what can still differ is
    # what the hash leaves out (the launch config's API key), attributes, or a file removed by hand.
    ensure_directory(release.path, release.ownership, check, outcome)
    for wanted in release.files:
        ensure_file(wanted, check, outcome)
    for name in release.absent:
        ensure_absent(release.path / name, check, outcome)


def leftover_stagings(releases_dir: Path) -> list[Path]:
    """Staging directories an interrupted run left behind (never named by a pointer: safe to remove)."""
    if not releases_dir.is_dir():
        return []
    return sorted(p for p in releases_dir.iterdir() if p.name.startswith(STAGING_PREFIX) and p.is_dir())


def validate_content(wanted: WantedFile, run: Runner) -> None:
    """Run the file's validate command on a private copy of the new content; raise with its output if it fails."""
    command = wanted.validate or ""
    if "%s" not in command:
        raise ValueError(f"{wanted.path}: validate {command!r} must contain %s (where the new content's path goes)")
    with tempfile.TemporaryDirectory(prefix="specgate-validate-") as private:
        candidate = Path(private) / wanted.path.name
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(wanted.content)
        rc, out, err = run([part.replace("%s", str(candidate)) for part in shlex.split(command)])
    if rc != 0:
        said = (err.strip() or out.strip()).replace(str(candidate), str(wanted.path))
        raise ValueError(f"{wanted.path}: `{command}` rejects the new content (rc {rc}), nothing was written: {said}")


def apply(
    directories: list[tuple[Path, Ownership]],
    release: WantedRelease | None,
    files: list[WantedFile],
    absent: list[Path],
    *,
    check: bool,
    run: Runner | None = None,
) -> Outcome:
    """Validate changed files first (a rejected one stops the call before anything is written), then create the
    directories (files may live in them), the release, the single files, the removals."""
    if not check:
        for wanted in files:
            if wanted.validate and read_existing(wanted.path) != wanted.content:
                if run is None:
                    raise ValueError(f"{wanted.path}: a validate command needs a runner")
                validate_content(wanted, run)
    outcome = Outcome()
    for path, ownership in directories:
        ensure_directory(path, ownership, check, outcome)
    if release is not None:
        for leftover in leftover_stagings(release.path.parent):
            outcome.changed_paths.append(str(leftover))
            if not check:
                shutil.rmtree(leftover)
        ensure_release(release, check, outcome)
    for wanted in files:
        ensure_file(wanted, check, outcome)
    for path in absent:
        ensure_absent(path, check, outcome)
    return outcome
