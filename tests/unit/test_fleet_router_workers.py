"""Taking a worker out of sglang-router and putting it back: idempotent both ways, a floor of healthy workers that a
removal never goes below, and waits that end at the router's answer or at the timeout with the last state seen."""

from __future__ import annotations

import json

import pytest
import sglang_router_worker as module  # library/sglang_router_worker.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.fleet.router_client import FleetError, RouterClient, normalize_url
from ansible.module_utils.specgate.fleet.router_workers import add_worker, removal_refusal, remove_worker
from ansible.module_utils.testing import patch_module_args
from fake_clock import FakeClock
from fake_router import FakeRouter, serve

pytestmark = pytest.mark.host

ROUTER = "http://127.0.0.1:8000"
W1 = "http://10.0.0.11:30000"
W2 = "http://10.0.0.12:30000"


def client(fake: FakeRouter, api_key: str | None = None) -> RouterClient:
    return RouterClient(ROUTER, api_key=api_key, opener=fake.opener)


def test_add_registers_an_absent_worker_and_waits_until_the_router_lists_it_healthy():
    fake = FakeRouter(register_polls=3)
    clock = FakeClock()
    result = add_worker(client(fake), W1, 60, interval=0.5, clock=clock, sleep=clock.sleep)
    assert result.changed
    assert result.healthy_before == 0
    assert result.healthy_after == 1
    assert [w["url"] for w in result.workers] == [W1]
    assert result.polls == 3
    assert clock.now == pytest.approx(1.0)
    assert [call[:2] for call in fake.writes()] == [("POST", "/workers")]


def test_add_of_a_worker_already_healthy_changes_nothing_and_sends_no_registration():
    fake = FakeRouter()
    worker_id = fake.register(W1)
    result = add_worker(client(fake), W1, 60)
    assert not result.changed
    assert result.worker_id == worker_id
    assert fake.writes() == []


def test_add_of_a_listed_but_unhealthy_worker_waits_for_it_without_registering_it_again():
    fake = FakeRouter()
    worker_id = fake.register(W1, healthy=False)
    clock = FakeClock()

    def recover(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now >= 2:
            fake.listed[worker_id]["is_healthy"] = True

    result = add_worker(client(fake), W1, 60, interval=1, clock=clock, sleep=recover)
    assert not result.changed
    assert result.healthy_after == 1
    assert fake.writes() == []
    assert clock.now == pytest.approx(2.0)


def test_add_gives_up_at_the_timeout_naming_the_url_and_the_last_state():
    fake = FakeRouter(register_polls=10**6)  # the worker never answers the router's probes
    clock = FakeClock()
    with pytest.raises(FleetError) as failure:
        add_worker(client(fake), W1, 5, interval=1, clock=clock, sleep=clock.sleep)
    message = str(failure.value)
    assert W1 in message
    assert "within 5 s" in message
    assert "sglang_router_worker_timeout" in message
    assert "AddWorker job processing" in message
    assert clock.now == pytest.approx(5.0)


def test_an_unhealthy_worker_at_the_timeout_is_named_with_its_health():
    fake = FakeRouter(unhealthy={W1})
    clock = FakeClock()
    with pytest.raises(FleetError, match=r"last state: listed, http://10\.0\.0\.11:30000 \(id .*\) not healthy"):
        add_worker(client(fake), W1, 3, interval=1, clock=clock, sleep=clock.sleep)


def test_a_registration_the_router_fails_ends_the_wait_at_once_with_its_message():
    fake = FakeRouter(register_polls=5, reject={W1: "Workflow failed at step create_worker: model mismatch"})
    clock = FakeClock()
    with pytest.raises(FleetError, match=r"could not register http://10\.0\.0\.11:30000: Workflow failed") as failure:
        add_worker(client(fake), W1, 600, interval=1, clock=clock, sleep=clock.sleep)
    assert "sglang_router_worker_api_key" in str(failure.value)
    assert clock.now < 5


def test_the_router_key_goes_as_bearer_and_the_worker_key_in_the_registration():
    fake = FakeRouter(api_key="router-key")
    add_worker(client(fake, api_key="router-key"), W1, 60, api_key="engine-key")
    assert fake.listed
    post = next(call for call in fake.calls if call[0] == "POST")
    assert post[2] == {"url": W1, "api_key": "engine-key"}


def test_a_router_that_wants_a_key_is_refused_naming_the_variable():
    fake = FakeRouter(api_key="router-key")
    with pytest.raises(FleetError, match=r"HTTP 401.*sglang_router_api_key"):
        add_worker(client(fake), W1, 60)


def test_a_trailing_slash_is_dropped_before_the_router_sees_the_url():
    # The router would probe <url>//health, which SGLang answers 404, and retry forever.
    fake = FakeRouter()
    result = add_worker(client(fake), W1 + "/", 60)
    assert result.url == W1
    assert fake.writes()[0][2] == {"url": W1}


@pytest.mark.parametrize("url", ["10.0.0.11:30000", "ftp://10.0.0.11", "http://", "http://h:1/?x=1"])
def test_a_url_that_is_not_http_host_port_is_refused(url):
    with pytest.raises(FleetError, match="worker_url"):
        normalize_url(url, "worker_url")


def test_remove_deletes_the_worker_and_waits_until_the_router_no_longer_knows_it():
    fake = FakeRouter(remove_polls=2)
    fake.register(W1)
    fake.register(W2)
    clock = FakeClock()
    result = remove_worker(client(fake), W1, 1, 60, interval=0.5, clock=clock, sleep=clock.sleep)
    assert result.changed
    assert (result.healthy_before, result.healthy_after) == (2, 1)
    assert [w["url"] for w in result.workers] == [W2]
    assert result.polls == 3
    assert clock.now == pytest.approx(1.0)


def test_removing_a_worker_the_router_does_not_list_changes_nothing():
    fake = FakeRouter()
    fake.register(W2)
    result = remove_worker(client(fake), W1, 1, 60)
    assert not result.changed
    assert "nothing to remove" in result.message
    assert fake.writes() == []


def test_a_removal_that_would_leave_too_few_healthy_workers_is_refused_before_anything_changes():
    fake = FakeRouter()
    fake.register(W1)
    fake.register(W2, healthy=False)
    with pytest.raises(FleetError) as failure:
        remove_worker(client(fake), W1, 1, 60)
    message = str(failure.value)
    assert "sglang_router_min_healthy_workers (1)" in message
    assert "would leave 0 healthy worker(s)" in message
    assert f"{W2} (id" in message
    assert "not healthy" in message
    assert "nothing was removed" in message
    assert fake.writes() == []


def test_removing_an_unhealthy_worker_keeps_the_healthy_count_and_is_allowed():
    workers_fake = FakeRouter()
    workers_fake.register(W1, healthy=False)
    workers_fake.register(W2)
    result = remove_worker(client(workers_fake), W1, 1, 60)
    assert result.changed
    assert (result.healthy_before, result.healthy_after) == (1, 1)


def test_the_floor_counts_the_healthy_workers_left_behind():
    fake = FakeRouter()
    fake.register(W1)
    fake.register(W2)
    workers = client(fake).workers()
    assert removal_refusal(workers, W1, 1) is None
    assert "fewer than sglang_router_min_healthy_workers (2)" in removal_refusal(workers, W1, 2)
    assert removal_refusal(workers, W1, 0) is None


def test_a_removal_the_router_never_finishes_fails_at_the_timeout_with_the_last_state():
    fake = FakeRouter(keep={W1})
    fake.register(W1)
    fake.register(W2)
    clock = FakeClock()
    with pytest.raises(FleetError, match=r"still lists http://10\.0\.0\.11:30000 .*last state: still registered"):
        remove_worker(client(fake), W1, 1, 4, interval=1, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(4.0)


def test_check_mode_reads_the_router_and_reports_what_would_change_without_changing_it():
    fake = FakeRouter()
    fake.register(W1)
    fake.register(W2)
    added = add_worker(client(fake), "http://10.0.0.13:30000", 60, check_mode=True)
    removed = remove_worker(client(fake), W1, 1, 60, check_mode=True)
    assert added.changed
    assert added.message.startswith("would add")
    assert removed.changed
    assert removed.message.startswith("would remove")
    assert fake.writes() == []
    assert len(fake.listed) == 2


def test_check_mode_still_refuses_a_removal_below_the_floor():
    fake = FakeRouter()
    fake.register(W1)
    with pytest.raises(FleetError, match="sglang_router_min_healthy_workers"):
        remove_worker(client(fake), W1, 1, 60, check_mode=True)


def test_an_answer_unlike_sglang_router_is_an_error_naming_the_router():
    def opener(method, url, body, headers, timeout):
        from ansible.module_utils.specgate.fleet.router_client import HttpAnswer

        return HttpAnswer(200, b"<html>a proxy's page</html>")

    with pytest.raises(FleetError, match=r"router at http://127\.0\.0\.1:8000 did not answer GET /workers"):
        RouterClient(ROUTER, opener=opener).workers()


def test_an_unreachable_router_is_an_error_naming_it():
    def opener(method, url, body, headers, timeout):
        from ansible.module_utils.specgate.fleet.router_client import HttpAnswer

        return HttpAnswer(None, b"", "ConnectionRefusedError: [Errno 111] Connection refused")

    with pytest.raises(FleetError, match="ConnectionRefusedError"):
        RouterClient(ROUTER, opener=opener).workers()


# The module over a real loopback connection (urllib), as Ansible runs it.


def run_module(capsys, args: dict) -> dict:
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_the_module_removes_and_adds_over_http_and_keeps_the_keys_out_of_its_result(capsys):
    fake = FakeRouter(api_key="router-key", register_polls=0)
    fake.register(W1)
    fake.register(W2)
    with serve(fake.handle) as router_url:
        common = {"router_url": router_url, "worker_url": W1, "api_key": "router-key", "poll_interval": 0.01}
        removed = run_module(capsys, {**common, "state": "absent", "min_healthy": 1})
        refused = run_module(capsys, {**common, "worker_url": W2, "state": "absent", "min_healthy": 1})
        added = run_module(capsys, {**common, "state": "present", "worker_api_key": "engine-key"})
    assert removed["changed"] is True
    assert removed["healthy_after"] == 1
    assert refused["failed"] is True
    assert "sglang_router_min_healthy_workers" in refused["msg"]
    assert added["changed"] is True
    assert added["healthy_after"] == 2
    for result in (removed, refused, added):
        assert "router-key" not in json.dumps(result)
        assert "engine-key" not in json.dumps(result)


def test_the_module_in_check_mode_changes_nothing(capsys):
    fake = FakeRouter()
    fake.register(W1)
    fake.register(W2)
    with serve(fake.handle) as router_url:
        result = run_module(capsys, {"router_url": router_url, "worker_url": W1, "state": "absent",
                                     "_ansible_check_mode": True})
    assert result["changed"] is True
    assert result["message"].startswith("would remove")
    assert len(fake.listed) == 2
