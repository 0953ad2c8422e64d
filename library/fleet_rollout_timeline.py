#!/usr/bin/python
"""Draw a fleet rollout's timeline picture on the controller (module_utils/specgate/fleet/timeline)."""

from __future__ import annotations

import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.fleet.timeline import gather, png

DOCUMENTATION = r"""
---
module: fleet_rollout_timeline
short_description: Draw a fleet rollout's live acceptance and tokens/s per replica, with each replica's steps
description:
  - Runs on the controller only (delegate_to localhost), when the fleet report is written. Reads live acceptance
    (tokens per verify step) and output tokens/s per replica over the rollout's window from Prometheus's query
    API, and draws them as a PNG with the moments each replica left the router, switched, was gated and rejoined
    (the report's marks).
  - Without a Prometheus URL, or when Prometheus does not answer or has no samples for the window yet (a fleet's
    first deploy installs it last), the picture holds the marks alone and its title says why. Never fails the
    rollout for that.
  - Writes the file atomically. In check mode it draws nothing.
version_added: "0.1.0"
author: specgate
options:
  dest:
    description: Where the PNG goes (the rollout's report directory, timeline.png).
    type: path
    required: true
  rows:
    description: The fleet report's rows (fleet.json's replicas), each with host (the replica's rank 0, which serves
      its API) and marks (leave, switch, gate, rejoin as UTC ISO 8601 moments).
    type: list
    elements: dict
    required: true
  prometheus_url:
    description: The Prometheus that scrapes the fleet, as the controller reaches it; empty for none.
    type: str
    default: ""
  title:
    description: The picture's title.
    type: str
    default: fleet rollout
attributes:
  check_mode:
    support: full
"""

EXAMPLES = r"""
- name: Draw the rollout's timeline beside fleet.md
  fleet_rollout_timeline:
    dest: /srv/specgate/reports/fleet/20261205T060000Z/timeline.png
    rows: "{{ report.json.replicas }}"
    prometheus_url: http://mon1:9090
  delegate_to: localhost
"""

RETURN = r"""
samples:
  description: Samples drawn per host (acceptance and tokens/s together); 0 where Prometheus had none.
  returned: always
  type: dict
marks:
  description: The marks drawn per host, in epoch seconds.
  returned: always
  type: dict
note:
  description: Why the curves are not Prometheus's (the bakes' windows instead, or marks alone); empty when they are.
  returned: always
  type: str
source:
  description: Where the curves come from, C(prometheus), C(bake) (each replica's bake windows), or empty (marks only).
  returned: always
  type: str
"""

ARGUMENT_SPEC = {
    "dest": {"type": "path", "required": True},
    "rows": {"type": "list", "elements": "dict", "required": True},
    "prometheus_url": {"type": "str", "default": ""},
    "title": {"type": "str", "default": "fleet rollout"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    timeline = gather(params["rows"], params["prometheus_url"], time.time())
    result = {"samples": timeline.samples(), "marks": timeline.marks, "note": timeline.note,
              "source": timeline.source}
    if module.check_mode:
        module.exit_json(changed=False, **result)
    picture = png(timeline, params["title"])
    directory = os.path.dirname(params["dest"]) or "."
    with tempfile.NamedTemporaryFile("wb", dir=directory, delete=False, suffix=".png.tmp") as out:
        out.write(picture)
    os.chmod(out.name, 0o644)
    os.replace(out.name, params["dest"])
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
