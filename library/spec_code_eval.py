#!/usr/bin/python
"""Ansible module: judge a benchmark's coding-eval answers by running their code in a throwaway systemd unit."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.gate.bench_report import bench_markdown
from ansible.module_utils.specgate.gate.code_eval import is_pending, judge_runs
from ansible.module_utils.specgate.gate.sandbox import Limits, Sandbox, SandboxError, interpreter_behind

DOCUMENTATION = r"""
---
module: spec_code_eval
short_description: Run the coding eval's model-written code in a systemd sandbox and judge it
description:
  - Takes the result of M(spec_bench), whose runs carry the coding eval's answers unjudged, and runs each
    answer's code with the problem's asserts in its own transient systemd unit (C(systemd-run --wait --pipe)).
  - The unit runs as a dynamic user made for it and released after it, with no network and no socket of any
    kind, the file system read-only except its own private C(/tmp) and C(/var/tmp) (removed when it ends), homes,
    C(/dev/shm) and I(inaccessible_paths) out of sight, other processes hidden, no capabilities or privilege
    gain, and wall-clock, CPU, memory, task, file-size and open-file limits. C(systemd-run) needs the system
    manager, so the module runs as root; the code never does.
  - Before any answer runs, a probe in the same unit checks that it is not root, cannot open a socket or reach a
    listener on the host's loopback, cannot write to C(/), cannot see the host's C(/tmp), cannot read
    I(inaccessible_paths), and can write its own temp dir. A host without a working C(systemd-run) (no systemd as
    PID 1, a container without the namespaces) fails the module with the cause; the code is never run another way.
  - Returns the benchmark with each run's C(eval) judged, and its markdown.
  - A benchmark without pending evals (eval off) is returned as it is, and nothing runs.
  - In check mode nothing runs; the benchmark is returned as given.
version_added: "0.1.0"
author: specgate
options:
  bench:
    description: The C(result) of M(spec_bench) (schema C(specgate.bench/v1)), its evals pending.
    type: dict
    required: true
  python:
    description:
      - Absolute path of the Python that runs the code inside the unit (C(-I -S), standard library only).
      - It must be readable by any user and outside the homes, e.g. the serving venv's. A venv's C(python) is
        resolved to the interpreter behind it (its symlinks followed), which runs the code the same way.
    type: path
    required: true
  timeout_s:
    description: Wall-clock limit of one answer's unit (C(RuntimeMaxSec)); its CPU limit is one second more.
    type: float
    default: 10
  memory_mb:
    description: Memory limit of one answer's unit (C(MemoryMax) and the address-space limit C(LimitAS)).
    type: int
    default: 1024
  tasks:
    description: Most processes and threads in one answer's unit (C(TasksMax)).
    type: int
    default: 16
  concurrency:
    description: Answers judged at once.
    type: int
    default: 4
  inaccessible_paths:
    description:
      - Paths hidden from the unit (C(InaccessiblePaths)) on top of their modes, e.g. the releases directory whose
        C(launch.yaml) holds the API key. A path that does not exist is skipped.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Benchmark as the service user; the eval's answers come back unjudged
  spec_bench:
    port: 30000
  become_user: sglang
  register: __generated

- name: Judge the answers in a throwaway systemd unit (as root, which systemd-run needs)
  spec_code_eval:
    bench: "{{ __generated.result }}"
    python: /opt/specgate/venv/bin/python
    inaccessible_paths: [/opt/specgate/releases]
  register: __bench
"""

RETURN = r"""
result:
  description:
    - The benchmark with each run's C(eval) judged - C(problems), C(passed), C(pass_rate), C(outcomes), C(results).
  returned: always
  type: dict
markdown:
  description: The benchmark as markdown tables, the eval included.
  returned: always
  type: str
sandbox:
  description:
    - How the code ran - C(properties) of the unit and C(probe), what the probe found (C(uid), C(socket), C(loopback),
      C(write_root), C(write_tmp), C(host_tmp_visible), C(read)); C(probe) is null when nothing ran.
  returned: always
  type: dict
"""


ARGUMENT_SPEC = {
    "bench": {"type": "dict", "required": True},
    "python": {"type": "path", "required": True},
    "timeout_s": {"type": "float", "default": 10.0},
    "memory_mb": {"type": "int", "default": 1024},
    "tasks": {"type": "int", "default": 16},
    "concurrency": {"type": "int", "default": 4},
    "inaccessible_paths": {"type": "list", "elements": "path", "default": []},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    bench = p["bench"]
    if p["timeout_s"] <= 0 or p["memory_mb"] < 64 or p["tasks"] < 1 or p["concurrency"] < 1:
        module.fail_json(msg="spec_code_eval needs timeout_s > 0, memory_mb >= 64, tasks >= 1 and concurrency >= 1")
    sandbox = Sandbox(
        python=interpreter_behind(p["python"]),
        limits=Limits(timeout_s=p["timeout_s"], memory_bytes=p["memory_mb"] * 1024 * 1024, tasks=p["tasks"]),
        inaccessible=tuple(p["inaccessible_paths"]),
        systemd_run=module.get_bin_path("systemd-run") or "systemd-run",
    )
    info = {"properties": sandbox.properties(), "probe": None}
    if module.check_mode:
        pending = any(is_pending(run.get("eval")) for run in bench.get("runs", []))
        msg = "check mode: nothing run" + (", the answers stay pending" if pending else "")
        module.exit_json(changed=False, result=bench, markdown="", sandbox=info, msg=msg)
    try:
        judged, probe = judge_runs(bench, sandbox, p["concurrency"])
    except (SandboxError, ValueError) as exc:
        module.fail_json(msg=str(exc), sandbox=info)
    info["probe"] = probe
    module.exit_json(changed=False, result=judged, markdown=bench_markdown(judged), sandbox=info)


if __name__ == "__main__":
    main()
