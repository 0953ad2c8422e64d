"""Action: follow one restart of a deployment on every node at once, ending all of them together (a single host is
a node group of one: rank 0 alone).

Rank 0 follows its async start job (the gated launch, the load, /health and identity) as specgate_follow_job does,
one specgate_job_wait call a round (it returns the moment the job ends), printing one progress line per round. Each
follower watches its own unit with sglang_service_node_state. They meet in a directory on the controller
(module_utils/specgate/service/node_signals.py): a follower whose engine exits writes its failure there with its
journal, which ends rank 0's wait at once with that node named (rank 0 itself would hang until NCCL's watchdog
fires); rank 0's outcome, success or failure, ends every follower's watch. The task never fails on the deployment's
outcome: it returns `outcome` (ready, failed, or stopped when another node ended the restart) and `message`, and the
role judges the group from every node's result.
Documentation: library/sglang_service_follow_nodes.py.
"""

from __future__ import annotations

import tempfile
import time

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleActionFail
from ansible.module_utils.specgate.common.follow_round import follow_round, module_call
from ansible.module_utils.specgate.common.progress import poll_delays
from ansible.module_utils.specgate.service.node_signals import (
    FAILED,
    READY,
    Signal,
    failed_follower,
    leader_outcome,
    read_signals,
    signal_dir,
    write_signal,
)
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset({"group", "restart_id", "rank", "signal_base", "jid", "progress_file", "label", "unit",
                             "baseline_restarts", "poll_interval", "timeout", "journal_lines", "since", "redact"})

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        for required in ("group", "restart_id", "rank"):
            if args.get(required) in (None, ""):
                raise AnsibleActionFail(f"sglang_service_follow_nodes needs {required}")
        self._host = (task_vars or {}).get("inventory_hostname", "?")
        self._rank = int(args["rank"])
        self._dir = signal_dir(args.get("signal_base") or tempfile.gettempdir(), args["group"], str(args["restart_id"]))
        self._interval = float(args.get("poll_interval", 5))
        self._deadline = time.monotonic() + float(args.get("timeout", 86400))
        self._vars = task_vars
        outcome = self._lead(args) if self._rank == 0 else self._follow(args)
        result.update(outcome, changed=False, signal_dir=str(self._dir))
        return result

    def _signal(self, outcome: str, message: str) -> None:
        write_signal(self._dir, Signal(self._host, self._rank, outcome, message))

    def _lead(self, args: dict) -> dict:
        jid = args.get("jid")
        if not jid:
            raise AnsibleActionFail("sglang_service_follow_nodes on rank 0 needs jid: its start job's ansible_job_id")
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        label = args.get("label") or "engine"
        last_line = None
        started = time.monotonic()
        delays = poll_delays(self._interval)
        while True:
            # One host call a round (specgate_job_wait): it returns the moment the start job ends, with its line.
            followed = follow_round(module_call(self, self._vars), jid=jid, async_dir=async_dir,
                                    wait=min(next(delays), self._deadline - time.monotonic()),
                                    progress_file=args.get("progress_file"))
            if followed.error:  # the round never looked at the job: it may still run, so it is not ready
                message = followed.follow_failure(label, jid, self._host)
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message}
            last_line = followed.line or last_line
            if followed.ended:
                status = followed.status
                ok = not status.get("failed")
                message = "" if ok else str(status.get("msg") or "the start failed")
                self._signal(READY if ok else FAILED, message)
                return {"outcome": READY if ok else FAILED, "message": message, "start": status,
                        "waited_s": round(time.monotonic() - started, 1)}
            follower = failed_follower(read_signals(self._dir))
            if follower is not None:
                message = f"node {follower.host} (rank {follower.rank}) failed: {follower.message}"
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message, "failed_node": follower.host,
                        "waited_s": round(time.monotonic() - started, 1)}
            if time.monotonic() > self._deadline:
                message = f"{label} did not end in time (job {jid} still runs on {self._host})"
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message}
            display.display(f"  [{self._host}] {last_line or f'{label}: starting'}")

    def _node_state(self, args: dict, journal: bool) -> dict:
        module_args = {"unit": args["unit"], "baseline_restarts": int(args.get("baseline_restarts") or 0),
                       "journal": journal, "since": float(args.get("since") or 0),
                       "journal_lines": int(args.get("journal_lines") or 40), "redact": args.get("redact") or []}
        return self._execute_module(module_name="sglang_service_node_state", module_args=module_args,
                                    task_vars=self._vars)

    def _follow(self, args: dict) -> dict:
        if not args.get("unit"):
            raise AnsibleActionFail("sglang_service_follow_nodes on a follower needs unit")
        delays = poll_delays(self._interval)
        while True:
            state = self._node_state(args, journal=False)
            if state.get("failed"):
                message = f"its state cannot be read: {state.get('msg')}"
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message}
            if state.get("gave_up"):
                journal = self._node_state(args, journal=True).get("journal") or []
                message = (f"{state['gave_up']}. Journal of {args['unit']} on {self._host} since the start:\n"
                           + "\n".join(journal))
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message, "journal": journal}
            leader = leader_outcome(read_signals(self._dir))
            if leader is not None:
                return {"outcome": READY if leader.outcome == READY else "stopped",
                        "message": "" if leader.outcome == READY else f"rank 0 ({leader.host}) ended the restart"}
            if time.monotonic() > self._deadline:
                message = "rank 0 never reported the restart's end"
                self._signal(FAILED, message)
                return {"outcome": FAILED, "message": message}
            time.sleep(next(delays))
