"""What a host serves, read in one pass on the host for the monitoring stage's textfile: the service's active and
known-good pointers (symlinks to <base>/releases/<id>), and the served release's server.yaml and gate.json as text
(parsed on the controller, which has the YAML parser; the host's Python need not).

One module call instead of a stat per pointer and a slurp per file: four host round trips on every run, the no-op
re-run included, became one.
"""

from __future__ import annotations

import os
from typing import Any

RELEASES = "releases"
SERVER_CONFIG = "server.yaml"
GATE_RECORD = "gate.json"


class ServedReleaseError(Exception):
    """The active pointer names a release whose server config cannot be read."""


def pointer(path: str) -> str:
    """The release id a pointer names (its target's last component), '' when the pointer is not there."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/"))
    except FileNotFoundError:
        return ""


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def read_served(base: str) -> dict[str, Any]:
    """{active, known_good, server_yaml, gate_json} of the service under ``base``: ids '' and texts None where the
    host serves nothing yet; gate_json None for a release deployed without a gate."""
    active = pointer(os.path.join(base, "active"))
    served: dict[str, Any] = {"active": active, "known_good": pointer(os.path.join(base, "known-good")),
                              "server_yaml": None, "gate_json": None}
    if not active:
        return served
    release_dir = os.path.join(base, RELEASES, active)
    served["server_yaml"] = _text(os.path.join(release_dir, SERVER_CONFIG))
    if served["server_yaml"] is None:
        raise ServedReleaseError(
            f"The active pointer names release {active}, whose {SERVER_CONFIG} is missing from {release_dir}. "
            "Fix: roll back to known-good (playbooks/rollback.yml) or deploy again; never edit a release directory "
            "in place"
        )
    served["gate_json"] = _text(os.path.join(release_dir, GATE_RECORD))
    return served
