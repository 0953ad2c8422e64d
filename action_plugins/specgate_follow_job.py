"""Action: follow an async job to its end, printing one progress line per round, and return its result.

`async_status` with `until`/`retries` can only print "FAILED - RETRYING ... (N retries left)" per round, and a
task file that includes itself again prints four task headers per round (hundreds of nested includes for a
550 GB download). This action is one task: each round is one specgate_job_wait call, which waits on the host until
the job ends or the round is over and reads the job's progress report (a JSON file the job rewrites, with a human
`line`) or its log; the action prints that line and goes on. Once the job ended, async_status gives its result.
Documentation: library/specgate_follow_job.py.
"""

from __future__ import annotations

import time

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleActionFail
from ansible.module_utils.specgate.common.follow_round import follow_round, module_call
from ansible.module_utils.specgate.common.progress import format_duration, poll_delays
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"jid", "progress_file", "log_file", "poll_interval", "print_interval", "timeout", "label"})

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        jid = args.get("jid")
        if not jid:
            raise AnsibleActionFail("specgate_follow_job needs jid: the ansible_job_id of a task run with poll: 0")
        interval = float(args.get("poll_interval", 15))
        # A wait that must notice its end quickly polls often, but says so only every print_interval.
        print_every = float(args.get("print_interval") or interval)
        printed_at = None
        timeout = float(args.get("timeout", 86400))
        label = args.get("label") or "job"
        progress_file = args.get("progress_file")
        log_file = args.get("log_file")
        if progress_file and log_file:
            raise AnsibleActionFail("specgate_follow_job takes progress_file (a JSON report) or log_file (a plain "
                                    "log), not both")
        host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        # As ansible.builtin.async_status's own action does: the job file lives in the shell's async_dir.
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        started = time.monotonic()
        delays = poll_delays(interval)
        polls = 0
        last_line = None
        while True:
            polls += 1
            # One host call a round: it returns the moment the job ends, with the job's progress line.
            remaining = timeout - (time.monotonic() - started)
            followed = follow_round(module_call(self, task_vars), jid=jid, async_dir=async_dir,
                                    wait=min(next(delays), remaining), progress_file=progress_file, log_file=log_file)
            if followed.error:
                raise AnsibleActionFail(followed.follow_failure(label, jid, host))
            last_line = followed.line or last_line
            if followed.ended:
                status = followed.status
                break
            elapsed = time.monotonic() - started
            if elapsed > timeout:
                result.update(failed=True, polls=polls, progress_line=last_line,
                              msg=f"{label} did not end within {timeout:.0f} s (job {jid} is still running on "
                                  f"{host}; its last progress: {last_line or 'none'})")
                return result
            if printed_at is None or elapsed - printed_at >= print_every:
                if log_file:  # the tool's own line, with how long it has run
                    display.display(f"  [{host}] {label}, {format_duration(elapsed)}: {last_line or 'started'}")
                else:
                    display.display(f"  [{host}] {last_line or f'{label}: starting'}")
                printed_at = elapsed
        # The job's own result (changed, msg, its return values) is this task's result, as with async_status.
        result.update(status)
        result.update(polls=polls, progress_line=last_line)
        return result

