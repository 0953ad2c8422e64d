#!/usr/bin/python
"""Ansible module: put the service's directories, release, unit and secrets in place in one host call."""

from __future__ import annotations

from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.service.service_files import Ownership, WantedFile, WantedRelease, apply

DOCUMENTATION = r"""
---
module: sglang_service_files
short_description: Write the service's directories, candidate release, unit and secrets file in one call
description:
  - Creates I(directories), writes the candidate I(release) directory, writes I(files) and removes I(absent),
    in that order, all in one call to the host. A reconfigure writes about a dozen files; one copy task per
    file costs three round trips each, which alone exceeded the toolkit's overhead budget.
  - A release directory that does not exist yet is written into a hidden sibling (C(.staging-<name>-*)) and
    renamed into place, so a release that exists is complete. Staging directories an interrupted run left
    behind are removed.
  - A release that exists keeps its content (its name hashes it); files whose content, owner, group or mode
    differ are rewritten (the launch config holds the API key, which the name does not hash), and names in
    I(release.absent) are removed.
  - Every file is written to a temporary file beside it, given its owner and mode before any content, fsynced
    and renamed over the old one, so readers never see a torn file and a secret is never briefly readable.
  - With C(--diff), shows each changed file, and a new release as the list of its files. Secret content is
    never shown.
  - Supports check mode (reports what would change, writes nothing; owners that do not exist yet are
    reported as changes, since the stage that creates them did not run).
version_added: "0.1.0"
author: specgate
options:
  directories:
    description: Directories to create (with parents) or correct.
    type: list
    elements: dict
    default: []
    suboptions:
      path: {description: Directory path., type: path, required: true}
      owner: {description: Owning user., type: str, default: root}
      group: {description: Owning group., type: str, default: root}
      mode: {description: Octal mode string such as C(0750)., type: str, required: true}
  release:
    description: The candidate release directory and the files it holds.
    type: dict
    suboptions:
      path: {description: The release directory (its name is the release id)., type: path, required: true}
      owner: {description: Owner of the directory and its files., type: str, default: root}
      group: {description: Group of the directory and its files., type: str, required: true}
      mode: {description: The directory's mode., type: str, default: "0750"}
      files:
        description: Files directly inside the release directory.
        type: list
        elements: dict
        required: true
        suboptions:
          name: {description: File name inside the release directory., type: str, required: true}
          content: {description: Content (shown in diffs). Exactly one of I(content) and I(secret)., type: str}
          secret: {description: Key in I(secrets) whose value is the content (never shown or logged)., type: str}
          mode: {description: Octal mode string., type: str, default: "0640"}
      absent:
        description: File names to remove from an existing release.
        type: list
        elements: str
        default: []
  files:
    description: Single files outside the release (unit, secrets file, layout record).
    type: list
    elements: dict
    default: []
    suboptions:
      path: {description: File path; its directory must exist or be in I(directories)., type: path, required: true}
      content: {description: Content (shown in diffs). Exactly one of I(content) and I(secret)., type: str}
      secret: {description: Key in I(secrets) whose value is the content (never shown or logged)., type: str}
      owner: {description: Owning user., type: str, default: root}
      group: {description: Owning group., type: str, default: root}
      mode: {description: Octal mode string., type: str, required: true}
      validate:
        description:
          - Command run on a private copy of the new content before anything at all is written, C(%s) standing
            for the copy's path (which keeps the file's name, e.g. C(systemd-analyze verify %s)). A non-zero exit
            fails the call with the command's output. Runs only when the content changes, and not in check mode.
        type: str
  absent:
    description: Files to remove (a secrets file no longer wanted, for example).
    type: list
    elements: path
    default: []
  secrets:
    description:
      - Contents of secret files, by the key their I(secret) names. A top-level C(no_log) option, because
        Ansible masks a nested secret only where it appears verbatim, and the module's invocation log writes a
        nested list through C(str()), which escapes newlines, so a multi-line secret nested in I(files) would
        reach the host's journal.
    type: dict
    default: {}
notes:
  - Supports check mode and diff mode.
"""

EXAMPLES = r"""
- name: Write the candidate release, the unit and the secrets file in one host call
  sglang_service_files:
    directories:
      - {path: /var/cache/specgate, owner: sglang, group: sglang, mode: "0750"}
      - {path: /etc/specgate, mode: "0750"}
    release:
      path: /opt/specgate/releases/dflash-bs8-62a1dfa441
      group: sglang
      files:
        - {name: server.yaml, content: "model-path: /models/kimi-k26\n"}
        - {name: launch.yaml, secret: launch}
    files:
      - {path: /etc/systemd/system/sglang.service, content: "[Unit]\n...", mode: "0644",
         validate: "systemd-analyze verify %s"}
      - {path: /etc/specgate/sglang.env, secret: hf_env, mode: "0600"}
    secrets:
      launch: "model-path: /models/kimi-k26\napi-key: sk-...\n"
      hf_env: "HF_TOKEN=hf_...\n"
  register: __sglang_service_files
"""

RETURN = r"""
changed_paths:
  description: Every path created, rewritten, corrected or removed (would be, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["/opt/specgate/releases/dflash-bs8-62a1dfa441", "/etc/systemd/system/sglang.service"]
release_created:
  description: Whether the release directory was new (written through a staging directory).
  returned: always
  type: bool
"""

_CONTENT = {"content": {"type": "str"}, "secret": {"type": "str", "no_log": False}}
_ONE_CONTENT = {"mutually_exclusive": [["content", "secret"]], "required_one_of": [["content", "secret"]]}

ARGUMENT_SPEC = {
    "directories": {
        "type": "list", "elements": "dict", "default": [],
        "options": {
            "path": {"type": "path", "required": True},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "mode": {"type": "str", "required": True},
        },
    },
    "release": {
        "type": "dict",
        "options": {
            "path": {"type": "path", "required": True},
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "required": True},
            "mode": {"type": "str", "default": "0750"},
            "files": {
                "type": "list", "elements": "dict", "required": True,
                "options": {"name": {"type": "str", "required": True}, **_CONTENT,
                            "mode": {"type": "str", "default": "0640"}},
                **_ONE_CONTENT,
            },
            "absent": {"type": "list", "elements": "str", "default": []},
        },
    },
    "files": {
        "type": "list", "elements": "dict", "default": [],
        "options": {
            "path": {"type": "path", "required": True}, **_CONTENT,
            "owner": {"type": "str", "default": "root"},
            "group": {"type": "str", "default": "root"},
            "mode": {"type": "str", "required": True},
            "validate": {"type": "str"},
        },
        **_ONE_CONTENT,
    },
    "absent": {"type": "list", "elements": "path", "default": []},
    "secrets": {"type": "dict", "default": {}, "no_log": True},
}  # fmt: skip


def _content(spec: dict, secrets: dict, where: str) -> tuple[bytes, bool]:
    if spec["secret"] is None:
        return spec["content"].encode(), False
    if spec["secret"] not in secrets:
        raise ValueError(f"{where}: secret {spec['secret']!r} is not a key of secrets")
    return str(secrets[spec["secret"]]).encode(), True


def wanted_state(params: dict) -> tuple[list, WantedRelease | None, list[WantedFile], list[Path]]:
    """The module's arguments as the logic's types; raises ValueError naming the bad entry."""
    directories = [
        (Path(d["path"]), Ownership.parse(d["owner"], d["group"], d["mode"], f"directories: {d['path']}"))
        for d in params["directories"]
    ]
    release = None
    if params["release"]:
        rel = params["release"]
        root = Path(rel["path"])
        files = []
        for f in rel["files"]:
            if "/" in f["name"] or f["name"] in ("", ".", ".."):
                raise ValueError(f"release.files: {f['name']!r} is not a plain file name")
            content, secret = _content(f, params["secrets"], f"release.files: {f['name']}")
            ownership = Ownership.parse(rel["owner"], rel["group"], f["mode"], f"release.files: {f['name']}")
            files.append(WantedFile(root / f["name"], content, ownership, secret))
        release = WantedRelease(
            root,
            Ownership.parse(rel["owner"], rel["group"], rel["mode"], f"release: {root}"),
            tuple(files),
            tuple(rel["absent"]),
        )
    files = []
    for f in params["files"]:
        content, secret = _content(f, params["secrets"], f"files: {f['path']}")
        ownership = Ownership.parse(f["owner"], f["group"], f["mode"], f"files: {f['path']}")
        files.append(WantedFile(Path(f["path"]), content, ownership, secret, f["validate"]))
    return directories, release, files, [Path(p) for p in params["absent"]]


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        directories, release, files, absent = wanted_state(module.params)
        if not module.check_mode:
            for path, ownership in directories:
                ownership.require(f"directories: {path}")
            if release is not None:
                release.ownership.require(f"release: {release.path}")
            for wanted in files:
                wanted.ownership.require(f"files: {wanted.path}")
        outcome = apply(directories, release, files, absent, check=module.check_mode, run=module.run_command)
    except (ValueError, OSError) as exc:
        module.fail_json(msg=str(exc))
    result = {"changed": outcome.changed, "changed_paths": outcome.changed_paths,
              "release_created": outcome.release_created}  # fmt: skip
    if module._diff and outcome.diff:
        result["diff"] = outcome.diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
