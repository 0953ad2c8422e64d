#!/usr/bin/python
"""Documentation of the specgate_copy_tree action (action_plugins/): it runs on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specgate_copy_tree
short_description: Copy a directory to the host only when it changed since the last copy
description:
  - Fingerprints the controller's directory I(src) by each file's relative path, size and modification time (as
    rsync's quick check does) and compares it with the manifest C(.specgate-tree.json) the last copy left in
    I(dest). When they match nothing is sent and the host is not asked for any file's checksum.
  - Otherwise copies the tree file by file with M(ansible.builtin.copy) (which sends only files whose content
    differs), printing how far it got at least every I(progress_interval) seconds, and writes the new manifest.
    A file removed on the controller is left on the host, as M(ansible.builtin.copy) does.
  - An action plugin running on the controller; supports check mode (reports whether a copy is due).
version_added: "0.1.0"
author: specgate
options:
  src:
    description: Directory on the controller.
    type: path
    required: true
  dest:
    description: Directory on the host.
    type: path
    required: true
  owner:
    description: Owner of the copied files.
    type: str
  group:
    description: Group of the copied files.
    type: str
  mode:
    description: Mode of the copied files.
    type: raw
  directory_mode:
    description: Mode of the directories created.
    type: raw
  progress_interval:
    description: >-
      Least seconds between two progress lines while files are copied (files and gigabytes done of the total);
      0 prints one after each file.
    type: float
    default: 30
attributes:
  check_mode:
    support: full
  action:
    support: full
"""

EXAMPLES = r"""
- name: Copy the wheelhouse to the host when it changed (air-gapped install)
  specgate_copy_tree:
    src: /srv/wheelhouse
    dest: /opt/specgate/wheelhouse
    owner: root
    group: root
    mode: "0644"
    directory_mode: "0755"
"""

RETURN = r"""
files:
  description: Files in the controller's tree.
  returned: always
  type: int
digest:
  description: SHA-256 of the tree's fingerprint, as recorded in the host's manifest.
  returned: always
  type: str
"""


def main() -> None:
    raise SystemExit("specgate_copy_tree is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
