#!/usr/bin/python
"""Ansible module: benchmark the SGLang server on this host (loopback) and return schema specgate.bench/v1."""

from __future__ import annotations

import asyncio
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.common.progress import ProgressWriter
from ansible.module_utils.specgate.gate.bench_client import BenchError
from ansible.module_utils.specgate.gate.bench_key import read_api_key
from ansible.module_utils.specgate.gate.bench_progress import BenchProgress
from ansible.module_utils.specgate.gate.bench_prompts import load_user_prompts
from ansible.module_utils.specgate.gate.bench_report import bench_markdown
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, cell_count, run_benchmark, validate

DOCUMENTATION = r"""
---
module: spec_bench
short_description: Benchmark a speculative-decoding SGLang server from the host itself
description:
  - Runs on the serving host, under the serving venv's Python, against C(127.0.0.1) so no port is opened to the
    controller.
  - Drives a matrix of prompt sets (built-in C(code), C(math), C(chat) and a user JSONL) x context lengths x
    concurrency levels with streaming C(/generate) requests, and records per cell output tok/s, request
    throughput, TTFT and ITL p50/p90/p99, acceptance length per request (SGLang's C(meta_info)) and
    server-side (C(/flush_cache) before the cell, C(/server_info) after), and tokens received vs requested.
  - Prompts of the requested token length are generated from a fixed seed and sized against the server's own
    tokenizer; nothing is downloaded.
  - Collects the answers of a coding-correctness eval without running their code; each run's C(eval) is
    C(pending) until M(spec_code_eval) runs the code in a throwaway systemd unit (which needs root, so the
    benchmark itself can run as an unprivileged user). Optionally runs SGLang's own C(sglang.benchmark.serving)
    on the same cells.
  - A request whose exchange breaks (the engine died mid-stream, a reset, a body cut short, a timeout) fails the
    module with the run and cell (prompt set, context, concurrency) and the request's error; no partial result.
  - Requests never go through a proxy set in the host's environment (C(http_proxy)); the server is on loopback.
  - In check mode nothing is sent to the server; the settings are validated.
version_added: "0.1.0"
author: specgate
options:
  port:
    description: Port the server listens on at I(host).
    type: int
    required: true
  host:
    description: Address of the server; loopback, the benchmark runs on the serving host.
    type: str
    default: 127.0.0.1
  api_key:
    description:
      - The server's API key, sent as an Authorization Bearer header. Empty when the server runs without one.
      - Prefer I(api_key_file) in an async task run as another user than the one connecting - Ansible leaves such a
        task's arguments on the host.
    type: str
    default: ""
  api_key_file:
    description:
      - The release's SGLang config on the host (its C(launch.yaml)), whose C(api-key) is the key to send, read as
        the benchmark's user. The key then never travels in the module's arguments.
      - Mutually exclusive with I(api_key).
    type: path
  sets:
    description: Prompt sets to run, each judged separately; C(user) needs I(user_prompts_file).
    type: list
    elements: str
    default: [code, math, chat]
  user_prompts_file:
    description: 'JSONL file on the host, one C({"prompt": "...", "max_tokens": N}) per line (max_tokens optional).'
    type: path
  contexts:
    description:
      - Context lengths, each a dict of name and tokens.
      - The user set runs at its own length (context C(native)).
    type: list
    elements: dict
    default: [{name: short, tokens: 512}, {name: long, tokens: 8192}]
  concurrency:
    description: Concurrency levels (requests in flight).
    type: list
    elements: int
    default: [1, 4, 16, 64, 256]
  output_tokens:
    description: Output tokens requested per request.
    type: int
    default: 256
  requests_per_concurrency:
    description: Requests per cell = max(I(min_requests), concurrency x this).
    type: int
    default: 2
  min_requests:
    description: Fewest requests in a cell.
    type: int
    default: 8
  warmup_requests:
    description: Requests sent and discarded before measuring.
    type: int
    default: 4
  seed:
    description: Seed of the prompt generator; the same seed gives the same prompts.
    type: int
    default: 1234
  temperature:
    description: Sampling temperature of the benchmark requests.
    type: float
    default: 0.0
  ignore_eos:
    description: Generate exactly I(output_tokens) per request, as SGLang's benchmark does.
    type: bool
    default: true
  request_timeout_s:
    description: Timeout of one request (and of the cross-check run).
    type: float
    default: 600
  runs:
    description: Repetitions of the whole matrix (the gate judges the spread between runs).
    type: int
    default: 1
  eval:
    description: Collect the coding-correctness eval's answers once per run (judged by M(spec_code_eval)).
    type: bool
    default: true
  eval_problems:
    description: Names of the eval problems to run; empty runs all of them.
    type: list
    elements: str
    default: []
  eval_max_tokens:
    description: Token limit of an eval answer.
    type: int
    default: 1024
  crosscheck:
    description: Also run C(python -m sglang.benchmark.serving) on each context x concurrency (first run only).
    type: bool
    default: false
  crosscheck_python:
    description: Python of the host venv that has SGLang (for I(crosscheck)).
    type: str
    default: ""
  dest:
    description: Write the result JSON here and the markdown table beside it (C(.md)); nothing written if unset.
    type: path
  progress_file:
    description:
      - Keep a progress report here while the benchmark runs (JSON with a human C(line) saying cell i of N, time
        so far and time left for the cells) for a task following this one run async (specgate_follow_job).
        Removed at the end.
    type: path
"""

EXAMPLES = r"""
- name: Benchmark the active release on the host, through its venv's Python
  spec_bench:
    port: "{{ specgate_release.port }}"
    api_key: "{{ spec_gate_api_key }}"
    contexts: [{name: short, tokens: 512}, {name: long, tokens: 8192}]
    concurrency: [1, 16, 64]
    runs: 3
    dest: "{{ specgate_release.dir }}/bench.json"
  vars:
    ansible_python_interpreter: "{{ specgate_sglang_env.python }}"
  register: __spec_gate_bench
"""

RETURN = r"""
result:
  description:
    - Schema C(specgate.bench/v1) - C(server), C(settings), and C(runs[]) each with C(cells[]), C(sets{}), C(eval).
    - "Each C(eval) is pending - C(pending) true and C(answers), each with C(name), C(answer) and C(finish_reason) -
      or null without I(eval)."
  returned: success, not in check mode
  type: dict
markdown:
  description: The benchmark as markdown tables (without the eval, which is judged later).
  returned: success, not in check mode
  type: str
"""


ARGUMENT_SPEC = {
    "port": {"type": "int", "required": True},
    "host": {"type": "str", "default": "127.0.0.1"},
    "api_key": {"type": "str", "default": "", "no_log": True},
    "api_key_file": {"type": "path"},
    "sets": {"type": "list", "elements": "str", "default": ["code", "math", "chat"]},
    "user_prompts_file": {"type": "path"},
    "contexts": {
        "type": "list",
        "elements": "dict",
        "default": [{"name": "short", "tokens": 512}, {"name": "long", "tokens": 8192}],
    },
    "concurrency": {"type": "list", "elements": "int", "default": [1, 4, 16, 64, 256]},
    "output_tokens": {"type": "int", "default": 256},
    "requests_per_concurrency": {"type": "int", "default": 2},
    "min_requests": {"type": "int", "default": 8},
    "warmup_requests": {"type": "int", "default": 4},
    "seed": {"type": "int", "default": 1234},
    "temperature": {"type": "float", "default": 0.0},
    "ignore_eos": {"type": "bool", "default": True},
    "request_timeout_s": {"type": "float", "default": 600.0},
    "runs": {"type": "int", "default": 1},
    "eval": {"type": "bool", "default": True},
    "eval_problems": {"type": "list", "elements": "str", "default": []},
    "eval_max_tokens": {"type": "int", "default": 1024},
    "crosscheck": {"type": "bool", "default": False},
    "crosscheck_python": {"type": "str", "default": ""},
    "dest": {"type": "path"},
    "progress_file": {"type": "path"},
}


def settings_from_params(p: dict) -> BenchSettings:
    contexts = []
    for entry in p["contexts"]:
        if not isinstance(entry.get("name"), str) or not isinstance(entry.get("tokens"), int):
            raise BenchError(f"spec_gate_bench_contexts entries need a string name and integer tokens, got {entry!r}")
        contexts.append((entry["name"], entry["tokens"]))
    user = ()
    if p["user_prompts_file"]:
        path = p["user_prompts_file"]
        if not os.path.isfile(path):
            raise BenchError(f"spec_gate_bench_user_prompts: {path} does not exist on the host")
        with open(path, encoding="utf-8") as f:
            user = tuple(load_user_prompts(f.read(), path))
    return BenchSettings(
        port=p["port"],
        host=p["host"],
        api_key=read_api_key(p["api_key_file"]) if p["api_key_file"] else p["api_key"] or None,
        sets=tuple(p["sets"]),
        user_prompts=user,
        contexts=tuple(contexts),
        concurrency=tuple(p["concurrency"]),
        output_tokens=p["output_tokens"],
        requests_per_concurrency=p["requests_per_concurrency"],
        min_requests=p["min_requests"],
        warmup_requests=p["warmup_requests"],
        seed=p["seed"],
        temperature=p["temperature"],
        ignore_eos=p["ignore_eos"],
        request_timeout_s=p["request_timeout_s"],
        runs=p["runs"],
        eval=p["eval"],
        eval_problems=tuple(p["eval_problems"]),
        eval_max_tokens=p["eval_max_tokens"],
        crosscheck=p["crosscheck"],
        crosscheck_python=p["crosscheck_python"],
    )


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, mutually_exclusive=[("api_key", "api_key_file")],
                           supports_check_mode=True)  # fmt: skip
    try:
        settings = settings_from_params(module.params)
        validate(settings)
        if module.check_mode:
            module.exit_json(changed=False, msg="check mode: settings valid, nothing sent to the server")
        progress = BenchProgress(cell_count(settings), settings.runs)
        progress_file = module.params["progress_file"]
        writer = ProgressWriter(progress_file, progress.report) if progress_file else None
        if writer is not None:
            writer.start()
        try:
            result = asyncio.run(run_benchmark(settings, progress))
        finally:
            if writer is not None:
                writer.stop()
                os.unlink(progress_file)
    except (BenchError, ValueError) as exc:
        module.fail_json(msg=str(exc))
    # The eval is judged by spec_code_eval, which writes the whole markdown again.
    markdown = bench_markdown({**result, "runs": [{**run, "eval": None} for run in result["runs"]]})
    changed = False
    if module.params["dest"]:
        dest = module.params["dest"]
        with open(dest, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        with open(os.path.splitext(dest)[0] + ".md", "w", encoding="utf-8") as f:
            f.write(markdown)
        changed = True
    module.exit_json(changed=changed, result=result, markdown=markdown)


if __name__ == "__main__":
    main()
