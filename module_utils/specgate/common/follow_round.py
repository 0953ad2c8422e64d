"""One round of following an async job from the controller, shared by the follow actions (specgate_follow_job, and
rank 0 of sglang_service_follow_nodes): one specgate_job_wait call, which returns the moment the job ends or when the
round is over, and once it ended, the job's own result from ansible.builtin.async_status.

`execute(module_name, module_args)` is the action's module call (`module_call`: ActionBase._execute_module with its
task vars).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FollowRound:
    ended: bool
    # The job's latest progress line, if the round read one.
    line: str | None = None
    # async_status's result (its invocation dropped) once the job ended.
    status: dict | None = None
    # Why the round could not look at the job (the host call failed): the job may still run.
    error: str | None = None

    def follow_failure(self, label: str, jid: str, host: str) -> str:
        """The follow's failure when the round could not run, naming the job and Ansible's reason."""
        return f"following {label} (job {jid}) on {host} failed: {self.error}"


def module_call(action, task_vars: dict | None) -> Callable[[str, dict], dict]:
    """An action's module call with its task vars, as follow_round takes it."""
    return lambda name, module_args: action._execute_module(module_name=name, module_args=module_args,
                                                            task_vars=task_vars)


def follow_round(execute: Callable[[str, dict], dict], *, jid: str, async_dir: str, wait: float,
                 progress_file: str | None = None, log_file: str | None = None) -> FollowRound:
    round_args = {"jid": jid, "async_dir": async_dir, "wait": max(0.0, wait),
                  "progress_file": progress_file, "log_file": log_file}
    waited = execute("ansible.legacy.specgate_job_wait", {k: v for k, v in round_args.items() if v is not None})
    if waited.get("failed"):
        return FollowRound(ended=False, error=str(waited.get("msg") or "the host call failed"))
    line = waited.get("progress_line") or None
    if not waited.get("ended"):
        return FollowRound(ended=False, line=line)
    status = dict(execute("ansible.legacy.async_status", {"jid": jid, "_async_dir": async_dir}))
    status.pop("invocation", None)
    return FollowRound(ended=True, line=line, status=status)
