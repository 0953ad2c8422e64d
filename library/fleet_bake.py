#!/usr/bin/python
"""Ansible module: watch a promoted replica under live traffic for a bake time and judge it from its /metrics."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.fleet.bake import (
    FAILED,
    INCONCLUSIVE,
    BakeError,
    http_scraper,
    read_counters,
    settings_from,
    watch,
)

DOCUMENTATION = r"""
---
module: fleet_bake
short_description: Watch a replica's live acceptance and errors on its /metrics for a bake time
description:
  - Scrapes the replica's C(/metrics) every I(interval) seconds for I(seconds) and judges each window from the
    counters SGLang 0.5.23 bumps once per finished request (C(srt/observability/metrics_collector.py)
    C(observe_one_finished_request)) - live acceptance length is C(sglang:generation_tokens_total) per
    C(sglang:spec_verify_calls_total) over the window, so only the requests the window saw count; 1.0 is SGLang
    decoding without speculation (its silent fallback).
  - Errors are C(sglang:num_aborted_requests_total) and 5xx answers in C(sglang:http_responses_total).
  - C(phase) is C(failed) when 3 windows in a row with traffic fall below I(min_accept_length), or the errors
    exceed I(max_errors); C(inconclusive) when fewer than I(min_requests) requests finished, or the metrics could
    not be read 3 times in a row; else C(passed). The module reports the phase and fails only on a bad
    measurement setup; the caller decides what a phase does.
  - Run it on the replica with the engine venv's Python (prometheus_client's parser, which SGLang depends on).
  - Changes nothing. In check mode it scrapes once and reports the counters, without waiting.
version_added: "0.1.0"
author: specgate
options:
  url:
    description: The replica's metrics, C(http://127.0.0.1:PORT/metrics).
    type: str
    required: true
  seconds:
    description: How long to watch.
    type: float
    required: true
  interval:
    description: Seconds between scrapes (one window each).
    type: float
    default: 5
  min_accept_length:
    description: The live acceptance floor.
    type: float
    required: true
  max_errors:
    description: Errored requests (aborted or 5xx) the bake tolerates.
    type: int
    default: 0
  min_requests:
    description: Finished requests the bake needs for a verdict.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Bake the promoted replica for five minutes under the fleet's traffic
  fleet_bake:
    url: http://127.0.0.1:30000/metrics
    seconds: 300
    min_accept_length: 2.0
  vars:
    ansible_python_interpreter: /opt/specgate/venv/bin/python
"""

RETURN = r"""
phase:
  description: C(passed), C(failed) or C(inconclusive).
  returned: always
  type: str
message:
  description: Why the bake failed or was inconclusive, naming the variable; empty when it passed.
  returned: always
  type: str
seconds:
  description: How long it watched.
  returned: always
  type: float
samples:
  description: Windows judged.
  returned: always
  type: int
requests:
  description: Requests finished during the bake.
  returned: always
  type: float
accept_length:
  description: Live acceptance length over the whole bake; null without traffic.
  returned: always
  type: float
min_accept_length:
  description: The lowest window's acceptance length; null without traffic.
  returned: always
  type: float
errors:
  description: Errored requests (aborted or 5xx) during the bake.
  returned: always
  type: float
windows:
  description:
    - Each window as C({t, at, requests, accept_length, errors, tokens_per_s}), where C(t) is seconds into the bake,
      C(at) the moment it ended (epoch seconds, the host's clock) and C(tokens_per_s) the output tokens per second.
  returned: always
  type: list
  elements: dict
"""

ARGUMENT_SPEC = {
    "url": {"type": "str", "required": True},
    "seconds": {"type": "float", "required": True},
    "interval": {"type": "float", "default": 5},
    "min_accept_length": {"type": "float", "required": True},
    "max_errors": {"type": "int", "default": 0},
    "min_requests": {"type": "int", "default": 10},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    scrape = http_scraper(module.params["url"])
    if module.check_mode:
        try:
            counters = read_counters(scrape())
        except BakeError as exc:
            module.fail_json(msg=str(exc))
        module.exit_json(changed=False, phase=INCONCLUSIVE, message="check mode: scraped once, not watched",
                         seconds=0.0, samples=0, requests=counters.requests, accept_length=None,
                         min_accept_length=None, errors=0.0, windows=[])
    result = watch(scrape, settings_from(module.params))
    module.exit_json(changed=False, failed_bake=result.phase == FAILED, **result.as_dict())


if __name__ == "__main__":
    main()
