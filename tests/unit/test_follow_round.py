"""One round of a follow, as both follow actions run it: the host wait (specgate_job_wait) first, and async_status
only once the job ended; a host call that fails is reported, never taken for the job's end."""

from __future__ import annotations

from ansible.module_utils.specgate.common.follow_round import follow_round


class Calls:
    def __init__(self, *answers: dict):
        self.answers = list(answers)
        self.made: list[tuple[str, dict]] = []

    def __call__(self, name: str, module_args: dict) -> dict:
        self.made.append((name, module_args))
        return self.answers.pop(0)


def test_a_round_that_ends_reads_the_job_s_result_once_without_its_invocation():
    calls = Calls({"ended": True, "progress_line": "done 3/3"},
                  {"finished": 1, "rc": 0, "stdout": "ok", "invocation": {"module_args": {}}})
    followed = follow_round(calls, jid="j1", async_dir="/a", wait=4.0, progress_file="/p.json")
    assert followed.ended
    assert followed.line == "done 3/3"
    assert followed.error is None
    assert followed.status == {"finished": 1, "rc": 0, "stdout": "ok"}
    assert calls.made == [
        ("ansible.legacy.specgate_job_wait", {"jid": "j1", "async_dir": "/a", "wait": 4.0, "progress_file": "/p.json"}),
        ("ansible.legacy.async_status", {"jid": "j1", "_async_dir": "/a"}),
    ]


def test_a_round_that_does_not_end_asks_nothing_more_and_passes_no_unset_file():
    calls = Calls({"ended": False, "progress_line": ""})
    followed = follow_round(calls, jid="j1", async_dir="/a", wait=-1.0, log_file="/l.log")
    assert not followed.ended
    assert followed.line is None
    assert followed.status is None
    assert calls.made == [("ansible.legacy.specgate_job_wait",
                           {"jid": "j1", "async_dir": "/a", "wait": 0.0, "log_file": "/l.log"})]


def test_a_failed_host_call_is_an_error_naming_the_job_not_an_end():
    calls = Calls({"failed": True, "msg": "interpreter not found"})
    followed = follow_round(calls, jid="j9", async_dir="/a", wait=1.0)
    assert not followed.ended
    assert followed.status is None
    failure = followed.follow_failure("download", "j9", "ct200")
    assert failure == "following download (job j9) on ct200 failed: interpreter not found"
    assert len(calls.made) == 1
