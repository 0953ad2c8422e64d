#!/usr/bin/python
"""Documentation of the sglang_service_follow_nodes action (action_plugins/): it runs on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_service_follow_nodes
short_description: Follow one restart of an SGLang deployment on every node, ending them together
description:
  - Run on every node of the deployment in one task; a single host is a node group of one (rank 0, no followers).
    On rank 0 it follows the async start job (a group's gated launch, the load, C(/health) and the identity) through
    M(ansible.builtin.async_status), printing the job's progress line per poll. On a follower it watches the node's
    unit with M(sglang_service_node_state).
  - The nodes meet in a directory on the controller named by I(group) and I(restart_id). A follower whose engine
    exits (or is restarted by systemd) writes its failure and journal there, which ends rank 0's wait at once with
    that node named; rank 0's outcome ends every follower's watch.
  - Never fails on the deployment's outcome; returns I(outcome) and I(message) for the role to judge the group.
  - An action plugin running on the controller; its polls run on the host with the task's become settings.
version_added: "0.1.0"
author: specgate
options:
  group:
    description: The deployment's name, the same on every node (C(sglang_service_nodes_group), or a single host's name).
    type: str
    required: true
  restart_id:
    description: Names this restart, the same on every node (rank 0's start job id).
    type: str
    required: true
  rank:
    description: This node's rank; 0 follows the start job, any other watches its unit.
    type: int
    required: true
  signal_base:
    description: Controller directory for the restart's signals (unset, the controller's temp directory).
    type: path
  jid:
    description: On rank 0, the C(ansible_job_id) of its async start.
    type: str
  progress_file:
    description: On rank 0, the start job's progress report on the host.
    type: path
  label:
    description: What rank 0's job is, for its progress lines.
    type: str
    default: engine
  unit:
    description: On a follower, its SGLang unit.
    type: str
  baseline_restarts:
    description: On a follower, its unit's C(NRestarts) right after the start.
    type: int
    default: 0
  since:
    description: Epoch seconds of the restart's start, where a failed follower's journal begins.
    type: float
    default: 0
  journal_lines:
    description: Journal lines of a failed follower returned at most.
    type: int
    default: 40
  redact:
    description: Secrets to blank out of a follower's journal.
    type: list
    elements: str
  poll_interval:
    description: >-
      Most seconds between polls; the first polls come sooner (0.5 s, doubling up to this), so a short job is seen
      ending within a second.
    type: float
    default: 5
  timeout:
    description: Seconds after which the node gives up and reports a failure.
    type: float
    default: 86400
attributes:
  check_mode:
    support: none
    details: There is no restart in check mode; skip the task there.
  action:
    support: full
"""

EXAMPLES = r"""
- name: Follow the engine load on every node until rank 0 serves or a node fails
  sglang_service_follow_nodes:
    group: kimi_h100_pair
    restart_id: "{{ hostvars[rank0].start_job.ansible_job_id }}"
    rank: "{{ node_rank }}"
    jid: "{{ start_job.ansible_job_id | default(omit) }}"
    unit: sglang.service
  register: follow
"""

RETURN = r"""
outcome:
  description: C(ready) (rank 0 serves), C(failed) (this node failed, or on rank 0 the deployment did), or C(stopped)
    (a follower whose restart another node ended).
  returned: always
  type: str
message:
  description: Why it failed, naming the node; empty when ready.
  returned: always
  type: str
signal_dir:
  description: The controller directory the nodes of this restart met in (remove it once every node ended).
  returned: always
  type: str
failed_node:
  description: On rank 0, the follower whose failure ended the restart.
  returned: when a follower failed
  type: str
start:
  description: On rank 0, its start job's own result (ready, identity, mismatches, journal).
  returned: on rank 0 when its job ended
  type: dict
journal:
  description: On a failed follower, its unit's journal since the start.
  returned: when a follower failed
  type: list
  elements: str
"""


def main() -> None:
    raise SystemExit("sglang_service_follow_nodes is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
