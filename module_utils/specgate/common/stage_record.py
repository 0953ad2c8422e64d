"""Is a provisioning stage already where its last full run left it? One read of the host instead of one per task.

A re-run with nothing to do is the common case, and each of a stage's tasks costs a host round trip (apt, pip, a
template, a copy, the probe...). A full run of a stage ends by writing a record: a digest of everything the run was
asked to do (the stage's variables, its plan, its task files, the wheel names it was handed) and the fingerprint of
what it left (the venv's installed set, the env file...). The next run reads the record and the real state in one
call; when the inputs are the same, the fingerprint is the same and every path, account and package the stage owns
is as the stage leaves it, the stage has nothing to do. Anything else (a bumped pin, a hand-edited env file, a
removed package, a changed mode, a newer specgate) sends the stage down its full path, which repairs it.

The record never stands in for the state: it only says which inputs produced the state that is checked now.
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RECORD_VERSION = 1


def inputs_digest(inputs: Any) -> str:
    """sha256 of the inputs as canonical JSON (sorted keys; values JSON cannot hold are spelled by str())."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


# How a part of the inputs reads in a reason (a stage's ``vars`` part is named by the variable itself).
PART_LABELS = {"plan": "the plan", "wheels": "the wheelhouse's wheels", "patches": "a patch file's content",
               "role": "the stage's own tasks (a newer specgate)"}  # fmt: skip


def input_parts(inputs: Any) -> dict[str, str]:
    """A digest per named part of the inputs, so a record can say which part changed: a mapping's keys one level down
    (``vars.sglang_env_patches``, ``plan.pin``), any other value whole (``wheels``)."""
    if not isinstance(inputs, Mapping):
        return {}
    parts = {}
    for name, value in inputs.items():
        if isinstance(value, Mapping) and value:
            parts.update({f"{name}.{key}": inputs_digest(item) for key, item in value.items()})
        else:
            parts[str(name)] = inputs_digest(value)
    return parts


def part_label(part: str) -> str:
    """``vars.sglang_env_patches`` -> ``sglang_env_patches``; ``plan.pin`` -> ``the plan's pin``."""
    name, _, key = part.partition(".")
    if name == "vars" and key:
        return key
    if key:
        return f"{PART_LABELS.get(name, name)}'s {key}" if name == "plan" else f"{name} {key}"
    return PART_LABELS.get(name, name)


def record_text(digest: str, fingerprint: str, parts: Mapping[str, str] | None = None) -> str:
    record = {"version": RECORD_VERSION, "inputs": digest, "fingerprint": fingerprint}
    if parts:
        record["parts"] = dict(parts)
    return json.dumps(record, sort_keys=True) + "\n"


def _changed_parts(recorded: Any, parts: Mapping[str, str]) -> list[str]:
    if not isinstance(recorded, Mapping) or not parts:
        return []
    changed = sorted(name for name in set(recorded) | set(parts) if recorded.get(name) != parts.get(name))
    return list(dict.fromkeys(part_label(name) for name in changed))


def record_differences(record_json: str | None, digest: str, fingerprint: str,
                       parts: Mapping[str, str] | None = None) -> list[str]:  # fmt: skip
    """Why the record does not vouch for this run: absent, unreadable, other inputs (naming the parts that changed,
    when the record has its parts' digests), or another fingerprint."""
    if record_json is None:
        return ["no record of a full run (first run, or one that did not finish)"]
    try:
        record = json.loads(record_json)
    except ValueError:
        return ["the record is not JSON"]
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return ["the record is of another format"]
    found = []
    if record.get("inputs") != digest:
        changed = _changed_parts(record.get("parts"), parts or {})
        found.append(f"these differ from the last full run's: {', '.join(changed)}" if changed
                     else "the inputs differ from the last full run's (a variable, the plan, the wheels or specgate)")
    if record.get("fingerprint") != fingerprint:
        found.append("what is installed differs from what the last full run left")
    return found


@dataclass(frozen=True)
class Observed:
    """A path as lstat sees it (kind is None when it does not exist)."""

    kind: str | None
    owner: str = ""
    group: str = ""
    mode: str = ""
    sha256: str = ""


def _name(lookup, ident: int) -> str:
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def observe(path: str, want_content: bool) -> Observed:
    """lstat the path; a regular file's sha256 only when the caller compares content."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return Observed(kind=None)
    kind = "link" if stat.S_ISLNK(info.st_mode) else "directory" if stat.S_ISDIR(info.st_mode) else "file"
    digest = ""
    if want_content and kind == "file":
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    return Observed(
        kind=kind,
        owner=_name(pwd.getpwuid, info.st_uid),
        group=_name(grp.getgrgid, info.st_gid),
        mode=f"{stat.S_IMODE(info.st_mode):04o}",
        sha256=digest,
    )


def content_digest(expected: Mapping[str, Any]) -> str | None:
    """The sha256 a path's file must have: its `sha256`, else that of its `content`; None when neither is given."""
    if expected.get("sha256"):
        return str(expected["sha256"])
    content = expected.get("content")
    return None if content is None else hashlib.sha256(str(content).encode()).hexdigest()


def path_differences(expected: Mapping[str, Any], seen: Observed) -> list[str]:
    """How a path differs from what the stage leaves: kind, owner, group, mode (a link's own mode is not its
    target's, so links are judged by kind only), content (the text the stage writes, or only its sha256 where the
    text is a secret the module must not be handed)."""
    path = expected["path"]
    want = expected.get("state", "file")
    if seen.kind is None:
        return [f"{path} is missing"]
    if seen.kind != want:
        return [f"{path} is a {seen.kind}, not a {want}"]
    found = []
    for attr in ("owner", "group", "mode") if want != "link" else ():
        if expected.get(attr) and str(expected[attr]).zfill(4 if attr == "mode" else 0) != getattr(seen, attr):
            found.append(f"{path} has {attr} {getattr(seen, attr)}, not {expected[attr]}")
    digest = content_digest(expected)
    if digest is not None and want == "file" and digest != seen.sha256:
        found.append(f"{path} differs from what the stage writes")
    return found


def account_differences(users: Iterable[Mapping[str, Any]], groups: Iterable[str]) -> list[str]:
    """Service accounts as the stage creates them: the group exists; the user exists with its group, shell, home."""
    found = []
    for name in groups:
        try:
            grp.getgrnam(name)
        except KeyError:
            found.append(f"group {name} is missing")
    for user in users:
        try:
            entry = pwd.getpwnam(user["name"])
        except KeyError:
            found.append(f"user {user['name']} is missing")
            continue
        if user.get("group") and _name(grp.getgrgid, entry.pw_gid) != user["group"]:
            found.append(f"user {user['name']}'s group is not {user['group']}")
        for attr, field in (("shell", entry.pw_shell), ("home", entry.pw_dir)):
            if user.get(attr) and field != user[attr]:
                found.append(f"user {user['name']}'s {attr} is {field}, not {user[attr]}")
    return found


def dpkg_query_argv(packages: Iterable[str]) -> list[str]:
    return ["dpkg-query", "-W", "-f", "${Package}\t${db:Status-Abbrev}\n", *packages]


def package_differences(packages: Iterable[str], dpkg_output: str) -> list[str]:
    """Packages dpkg-query does not list as installed ("ii"); a name it does not know at all is missing too."""
    status = {}
    for line in dpkg_output.splitlines():
        name, _, abbrev = line.partition("\t")
        status[name.split(":")[0]] = abbrev.strip()
    return [f"package {name} is not installed" for name in packages if status.get(name.split(":")[0]) != "ii"]
