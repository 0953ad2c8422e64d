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
  - Otherwise lists the files under I(dest) once (M(ansible.builtin.find)) and sends those the host lacks or holds
    at another size or modification second (rsync's quick check), packed in uncompressed archives of at most
    I(batch_bytes) that M(ansible.builtin.unarchive) unpacks, printing how far it got at least every
    I(progress_interval) seconds; then writes the new manifest. The archives carry each file's modification second
    and I(mode), so a file once sent matches from then on. A file removed on the controller is left on the host,
    as M(ansible.builtin.copy) does. The host needs GNU tar, as M(ansible.builtin.unarchive) does.
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
    description: Mode of the copied files, in octal (V(0644)); by default each file keeps its mode on the controller.
    type: raw
  directory_mode:
    description: Mode of the directories created, in octal (V(0755)).
    type: raw
  batch_bytes:
    description: Most bytes in one archive sent to the host (a larger file goes alone); progress is printed between
      archives.
    type: int
    default: 268435456
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
sent:
  description: Files sent to the host (those it lacked or held at another size or modification second).
  returned: when the tree was copied
  type: int
"""


def main() -> None:
    raise SystemExit("specgate_copy_tree is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
