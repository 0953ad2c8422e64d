#!/usr/bin/python
"""Wait on the host for an async job to end, one round of a follow (the specgate_follow_job and
sglang_service_follow_nodes actions call it)."""

from __future__ import annotations

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.common.job_wait import read_tail, wait_for_job
from ansible.module_utils.specgate.common.progress import (
    LOG_TAIL_BYTES,
    REPORT_MAX_BYTES,
    last_log_line,
    progress_line,
)

DOCUMENTATION = r"""
---
module: specgate_job_wait
short_description: Wait on the host, up to a round's length, for an async job to end; read its progress line
description:
  - One round of following a job started with C(async) and C(poll=0). The module watches the job's file in
    I(async_dir) on the host and returns as soon as M(ansible.builtin.async_status) would call the job finished,
    or when I(wait) seconds have passed, so the controller sees the end at once with one host call per round.
  - It also reads the job's progress report (I(progress_file), a JSON file with a C(line) key) or the tail of the
    log its command writes (I(log_file)) and returns that line.
  - It does not return the job's result; ask M(ansible.builtin.async_status) for it once C(ended) is true. A
    missing or unreadable job file counts as ended, so async_status reports it.
  - The specgate_follow_job and sglang_service_follow_nodes actions call it; a play has no need to.
version_added: "0.1.0"
author: specgate
options:
  jid:
    description: The C(ansible_job_id) the async task registered.
    type: str
    required: true
  async_dir:
    description: The directory of the job files, as the async task's shell expanded it (C(ansible_async_dir)).
    type: path
    required: true
  wait:
    description: Most seconds to wait in this round.
    type: float
    default: 10
  progress_file:
    description: The job's progress report; its C(line) is returned.
    type: path
  log_file:
    description: A plain log the job's command writes; its last complete line is returned. Mutually exclusive with
      I(progress_file).
    type: path
attributes:
  check_mode:
    support: full
    details: It only reads.
"""

EXAMPLES = r"""
- name: Wait up to 10 s for the benchmark job to end and read its progress line
  specgate_job_wait:
    jid: "{{ __spec_gate_bench_job.ansible_job_id }}"
    async_dir: /var/cache/specgate/ansible-async
    wait: 10
    progress_file: /opt/specgate/releases/current/bench-progress.json
  register: __round
"""

RETURN = r"""
ended:
  description: The job ended (or its file is gone); ask M(ansible.builtin.async_status) for its result.
  returned: always
  type: bool
progress_line:
  description: The progress report's line or the log's last complete line, null before the job wrote one.
  returned: always
  type: str
waited_s:
  description: Seconds this round waited on the host.
  returned: always
  type: float
"""

ARGUMENT_SPEC = {
    "jid": {"type": "str", "required": True},
    "async_dir": {"type": "path", "required": True},
    "wait": {"type": "float", "default": 10},
    "progress_file": {"type": "path"},
    "log_file": {"type": "path"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           mutually_exclusive=[("progress_file", "log_file")])  # fmt: skip
    p = module.params
    started = time.monotonic()
    ended = wait_for_job(os.path.join(p["async_dir"], p["jid"]), p["wait"])
    if p["progress_file"]:
        line = progress_line(read_tail(p["progress_file"], REPORT_MAX_BYTES))
    elif p["log_file"]:
        line = last_log_line(read_tail(p["log_file"], LOG_TAIL_BYTES))
    else:
        line = None
    module.exit_json(changed=False, ended=ended, progress_line=line, waited_s=round(time.monotonic() - started, 2))


if __name__ == "__main__":
    main()
