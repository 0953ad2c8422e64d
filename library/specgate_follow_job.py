#!/usr/bin/python
"""Documentation of the specgate_follow_job action (action_plugins/): it runs on the controller."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: specgate_follow_job
short_description: Follow an async job to its end, printing one progress line per poll
description:
  - Polls a job started with C(async) and C(poll=0) through M(ansible.builtin.async_status) until it ends, and
    between polls reads the job's progress report (a JSON file with a C(line) key, written by the job) and
    prints that line, so a long download shows bytes, rate and ETA under one task header.
  - The task's result is the job's own result (as M(ansible.builtin.async_status) returns it when finished),
    plus the number of polls and the last progress line.
  - An action plugin running on the controller; its polls run on the host with the task's become settings.
version_added: "0.1.0"
author: specgate
options:
  jid:
    description: The C(ansible_job_id) the async task registered.
    type: str
    required: true
  progress_file:
    description: Path on the host of the job's progress report; without it, only the polls are shown.
    type: path
  log_file:
    description: >-
      Path on the host of a plain log the job's command writes (its output redirected there), for a tool that
      prints its own progress, such as debootstrap or podman import: each printed line is the log's last complete
      line with the time the job has run. Mutually exclusive with O(progress_file).
    type: path
  poll_interval:
    description: >-
      Most seconds between polls; the first polls come sooner (0.5 s, doubling up to this), so a short job is seen
      ending within a second.
    type: float
    default: 15
  print_interval:
    description: >-
      Least seconds between two printed lines (the first poll's is always printed); by default each poll prints.
      A short O(poll_interval) with a longer print interval notices the job's end quickly without a line per poll.
    type: float
  timeout:
    description: Seconds after which the task fails (the job keeps running on the host).
    type: float
    default: 86400
  label:
    description: What the job is, for the lines printed before its first report and the timeout message.
    type: str
    default: job
attributes:
  check_mode:
    support: none
    details: There is no job in check mode; skip the task there, as the task that starts the job is skipped.
  action:
    support: full
"""

EXAMPLES = r"""
- name: Follow the download until it ends, printing bytes done/total, rate and ETA
  specgate_follow_job:
    jid: "{{ __model_weights_job.ansible_job_id }}"
    progress_file: /models/.specgate-download-progress.json
    poll_interval: 15
    label: weights
  register: __model_weights_job_status

- name: Follow debootstrap through its log, a line every 30 s
  specgate_follow_job:
    jid: "{{ __debootstrap_job.ansible_job_id }}"
    log_file: /tmp/specgate-rootfs.log
    poll_interval: 5
    print_interval: 30
    label: debootstrap
"""

RETURN = r"""
finished:
  description: 1 when the job ended (the job's own return values come with it).
  returned: always
  type: int
polls:
  description: How many times the job was asked.
  returned: always
  type: int
progress_line:
  description: The last progress line read, or null when the job never wrote one.
  returned: always
  type: str
"""


def main() -> None:
    raise SystemExit("specgate_follow_job is an action plugin: Ansible runs it on the controller")


if __name__ == "__main__":
    main()
