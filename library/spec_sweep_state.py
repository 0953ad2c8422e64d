#!/usr/bin/python
"""Ansible module (controller only): the sweep's next point from the rows so far, or the sweep's report."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.sweep.manifest import MANIFEST_FILE, ON_CHANGE, ManifestChanged, build, settle
from ansible.module_utils.specgate.sweep.repeats import repeat_rounds
from ansible.module_utils.specgate.sweep.resume import load_rows
from ansible.module_utils.specgate.sweep.run import (
    SweepInputError,
    check_max_repeats,
    describe,
    drafter_of,
    next_step,
    points_of,
    repeat_plan,
    report,
    started_row,
    sweep_drafters,
)

DOCUMENTATION = r"""
---
module: spec_sweep_state
short_description: The sweep's manifest, its next point to launch from the rows on the controller, or its report
description:
  - "Runs on the controller only (C(delegate_to: localhost)): the sweep's rows live there, and the sweep package
    it uses needs the controller's venv (jinja2 for the grid's constraints, matplotlib for the plots)."
  - C(state=manifest) records what determines every row of the sweep id (each point's key, drafter revision
    included, and the I(conditions) - benchmark matrix, engine, target) in C(manifest.json) in I(dir); a re-run whose
    manifest differs is refused naming what differs (I(on_change=refuse)), or continues in a fresh id C(<id>.2)
    that says which one it continues (I(on_change=new)). Points added to or left out of the grid, and its order,
    are not a change. Returns the id and directory the run writes to.
  - C(state=next) expands I(grid) (or takes I(configs)), reads the rows written so far in I(dir)
    (C(<name>.json), each read only when it was measured for the point's settings under these I(conditions)), and
    answers the point to launch next - the first unfinished one, or in I(search) mode the
    search's next proposal - with the progress line to print as it starts. A point whose row is finished (ran,
    crashed on start, or rejected before any launch) is not launched again; a point whose row says started (the
    sweep was interrupted mid-bench) is redone. Changes nothing.
  - C(state=report) writes sweep.md (embedding the plots), sweep.json and PNG plots in I(dir) from the rows that
    stand, with the winner per use case (the cheapest config within I(tolerance) of the best mean over
    runs) and the inventory snippet that deploys each winner.
  - C(state=repeats) takes I(row), the row of the point serving now, and answers which of its use cases it
    leaves undecided against the other points' rows (within noise of what it must beat) or leads, and the benchmark that
    repeats their deciding cells while the point still serves, up to I(max_repeats) more runs per use case. Changes
    nothing.
  - Bad sweep settings fail naming the variable (spec_sweep_grid, spec_sweep_configs, spec_sweep_search,
    spec_sweep_tolerance, model_weights_drafters) and the fix.
  - Every answer lists I(drafters), the drafters the points need besides the weights stage's own, once each; the
    weights stage downloads them before the first launch (model_weights_sweep_drafters).
  - Check mode is supported; with C(state=report) it works the report out and writes nothing.
version_added: "0.2.0"
author: specgate
options:
  state:
    description: C(manifest) to record or check the sweep's manifest, C(next) for the point to launch next,
      C(repeats) for the repeats the serving point's row wants, C(report) to write the report.
    type: str
    choices: [next, report, manifest, repeats]
    default: next
  dir:
    description: The sweep's directory on the controller, where its rows are and the report goes.
    type: path
    required: true
  grid:
    description: The sweep's grid (spec_sweep_grid), one sub-grid or a list of them, each with axes and constraints.
    type: raw
  configs:
    description: The v1 configs (spec_sweep_configs) resolved, each C({name, vars}); exactly one of I(grid) and
      I(configs) is set.
    type: list
    elements: dict
    default: []
  search:
    description: Launch only the points the opt-in search asks for, instead of every point (needs I(grid)).
    type: bool
    default: false
  tolerance:
    description: The pick's and the search's tolerance, a fraction of the best mean over runs.
    type: float
    default: 0.01
  started:
    description: When this run of the sweep started (seconds since the epoch), for the progress line's elapsed time.
    type: float
  weights_drafter:
    description: The drafter the weights stage fetches for the deployment, C({name, repo, revision, local_path}); a
      point naming none runs on it, and a point naming the same source needs no download of its own.
    type: dict
  drafters_catalog:
    description:
      - The target's drafters by name (model_weights_drafters), each C({repo, revision}) or C({local_path}); a point
        (a grid's C(drafter) or C(drafter) axis, a config's C(drafter) or its profile's model_weights_drafter) names
        its drafter by an entry of it, or by C({repo, revision}).
      - A name not in it, a repo without a revision, or two revisions of one repo are refused, naming the variable
        and the fix.
    type: dict
    default: {}
  conditions:
    description:
      - What every row of the sweep shares, by section - C(matrix) (the benchmark's settings), C(engine) (what the
        venv installs) and C(target) (the target's repo and revision); rows carry its digest.
    type: dict
    default: {}
  on_change:
    description: With C(state=manifest), what a re-run of a sweep id whose manifest changed does - C(refuse) it
      before anything changes, or measure in a fresh id that continues it (C(new)).
    type: str
    choices: [refuse, new]
    default: refuse
  sweep_id:
    description: The sweep's name, for the report's title (C(state=report)).
    type: str
    default: sweep
  host:
    description: The host swept, for the report's title (C(state=report)).
    type: str
    default: ""
  row:
    description: With C(state=repeats), the serving point's row so far (its benchmark's, with any repeats taken).
    type: dict
  max_repeats:
    description: With C(state=repeats), the most runs added to one use case's deciding cells (spec_sweep_max_repeats);
      0 turns repeats off.
    type: int
    default: 9
  benchmark_runs:
    description: The runs each point's benchmark takes (spec_gate_runs); with I(max_repeats), how many rounds of
      repeats a point can take (C(repeat_rounds)).
    type: int
    default: 3
  plot_by:
    description: What labels a series in the plots (C(state=report)) - empty, each config's name; else the point's
      settings (C(algorithm), C(block_size), C(budget), C(topk), C(window), C(parallel), C(drafter)) or
      sglang_service_* variables to label it by, each with its value (as vLLM's C(--label-by)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Record the sweep's manifest, or refuse a re-run whose benchmark matrix, engine or points changed
  spec_sweep_state:
    state: manifest
    dir: reports/ct200/sweeps/field-notes
    grid: "{{ spec_sweep_grid }}"
    conditions:
      matrix: {spec_gate_bench_concurrency: [1, 8], spec_gate_runs: 3}
      engine: {sglang_env_packages: ["sglang==0.5.23"]}
      target: {model_weights_target_revision: 0123abcd}
    on_change: refuse
  delegate_to: localhost
  register: sweep_manifest

- name: Ask which point to launch next
  spec_sweep_state:
    dir: reports/ct200/sweeps/field-notes
    grid: "{{ spec_sweep_grid }}"
    search: true
    started: "{{ sweep_started }}"
  delegate_to: localhost
  register: next_point

- name: Write the sweep's report (sweep.md, sweep.json, plots)
  spec_sweep_state:
    state: report
    dir: reports/ct200/sweeps/field-notes
    grid: "{{ spec_sweep_grid }}"
    sweep_id: field-notes
    host: ct200
  delegate_to: localhost
"""

RETURN = r"""
sweep_id:
  description: The id this run writes to - the one asked for, or its continuation (I(on_change=new)).
  type: str
  returned: state=manifest
dir:
  description: The directory this run's rows go to.
  type: str
  returned: state=manifest
continues:
  description: The id this one continues (I(on_change=new)), else null.
  type: str
  returned: state=manifest
differences:
  description: What differed from the id asked for, when a fresh id continues it.
  type: list
  elements: str
  returned: state=manifest
unrecorded_rows:
  description: The directory held rows but no manifest (a sweep of an older specgate); none of them is read.
  type: bool
  returned: state=manifest
conditions_digest:
  description: The digest of I(conditions) every row of this run carries.
  type: str
  returned: state=manifest
points:
  description: Every point of the sweep in order, each C({name, file, vars, key, row, cost, drafter}); C(row) is what
    every row of the point records (its key and the conditions digest); C(drafter) is
    null for a point on the weights stage's drafter, else C({key, name, repo, revision, local_path}) (C(key) names it
    in specgate_weights.drafters; null when it is the weights stage's own).
  type: list
  elements: dict
  returned: always
drafters:
  description: The drafters the points need besides the weights stage's own, once each, in order, each
    C({key, name, repo, revision, local_path}).
  type: list
  elements: dict
  returned: always
point:
  description: The point to launch next (as in I(points)), or null when the sweep is done.
  type: dict
  returned: state=next
done:
  description: Whether nothing is left to launch.
  type: bool
  returned: state=next
progress:
  description: "The line to print as the point starts: point i of N, elapsed, ETA from the launches so far."
  type: str
  returned: state=next
started_row:
  description: The row to write as the point's launch begins (status started), so an interrupted point is redone.
  type: dict
  returned: state=next
finished:
  description: The points whose rows are finished.
  type: list
  elements: str
  returned: state=next
skipped_points:
  description: The points rejected before any launch, each C({name, reason}).
  type: list
  elements: dict
  returned: state=next
failed_points:
  description: The points that crashed on start or in their benchmark, each C({name, reason}).
  type: list
  elements: dict
  returned: state=next
redo:
  description: Per point to launch again, why its row does not count.
  type: dict
  returned: state=next
pruned:
  description: Search mode, once done, per point not launched, why (how far its bound stays below the best).
  type: dict
  returned: state=next
notes:
  description: Search mode, once done, per use case which neighbours confirm the winner, and any crash beside it.
  type: list
  elements: str
  returned: state=next
repeat_rounds:
  description: The most rounds of repeats a point can take while it serves, each doubling its runs from
    I(benchmark_runs) until I(max_repeats) more are spent (0 - repeats off).
  type: int
  returned: state=next
wanted:
  description: With C(state=repeats), per use case metric the point leaves undecided, how many more runs to take
    now; empty when nothing is to be repeated.
  type: dict
  returned: state=repeats
runs:
  description: With C(state=repeats), the runs of the repeat benchmark (0 - nothing to repeat).
  type: int
  returned: state=repeats
contexts:
  description: With C(state=repeats), the context lengths (tokens) of the wanted metrics' deciding cells.
  type: list
  elements: int
  returned: state=repeats
concurrency:
  description: With C(state=repeats), the concurrency levels of the wanted metrics' deciding cells.
  type: list
  elements: int
  returned: state=repeats
winners:
  description: Per use case, the pick with its notes, inventory snippet and out-of-distribution warning.
  type: dict
  returned: state=report
markdown:
  description: sweep.md's text.
  type: str
  returned: state=report
launches:
  description: "C({mode, launched, points, pruned, notes}): the engine launches this sweep took."
  type: dict
  returned: state=report
files:
  description: The files the report is made of (sweep.md, sweep.json, the plots); none written in check mode.
  type: list
  elements: str
  returned: state=report
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["next", "report", "manifest", "repeats"], "default": "next"},
            "dir": {"type": "path", "required": True},
            "grid": {"type": "raw"},
            "configs": {"type": "list", "elements": "dict", "default": []},
            "search": {"type": "bool", "default": False},
            "tolerance": {"type": "float", "default": 0.01},
            "started": {"type": "float"},
            "weights_drafter": {"type": "dict"},
            "drafters_catalog": {"type": "dict", "default": {}},
            "conditions": {"type": "dict", "default": {}},
            "on_change": {"type": "str", "choices": list(ON_CHANGE), "default": "refuse"},
            "sweep_id": {"type": "str", "default": "sweep"},
            "host": {"type": "str", "default": ""},
            "plot_by": {"type": "list", "elements": "str", "default": []},
            "row": {"type": "dict"},
            "max_repeats": {"type": "int", "default": 9},
            "benchmark_runs": {"type": "int", "default": 3},
        },
        supports_check_mode=True,
    )
    p = module.params
    directory = Path(p["dir"])
    try:
        check_max_repeats(p["max_repeats"])
        weights_drafter = drafter_of(p["weights_drafter"])
        points = points_of(p["grid"], p["configs"], weights_drafter=weights_drafter, catalog=p["drafters_catalog"])
        manifest = build(points, p["conditions"])
        conditions = manifest.conditions_digest
        if p["state"] == "manifest":
            settled = settle(directory.parent, directory.name, manifest, p["on_change"])
            if settled.write and not module.check_mode:
                settled.directory.mkdir(parents=True, exist_ok=True)
                (settled.directory / MANIFEST_FILE).write_text(json.dumps(settled.manifest, indent=1) + "\n")
            module.exit_json(changed=settled.write, sweep_id=settled.sweep_id, dir=str(settled.directory),
                             continues=settled.continues, differences=list(settled.differences),
                             unrecorded_rows=settled.unrecorded_rows, conditions_digest=conditions)  # fmt: skip
        rows = load_rows(directory) if directory.is_dir() else []
        listed = [describe(q, weights_drafter, conditions) for q in points]
        drafters = sweep_drafters(points, weights_drafter)
        if p["state"] == "repeats":
            if not p["row"]:
                module.fail_json(msg="spec_sweep_state: state=repeats needs row (the serving point's row).")
            planned = repeat_plan(points, rows, p["row"], max_repeats=p["max_repeats"], tolerance=p["tolerance"],
                                  conditions=conditions)  # fmt: skip
            module.exit_json(changed=False, points=listed, drafters=drafters, **planned)
        if p["state"] == "report":
            written = report(directory, p["sweep_id"], p["host"], points, rows, search=p["search"],
                             tolerance=p["tolerance"], write=not module.check_mode, conditions=conditions,
                             plot_by=p["plot_by"])  # fmt: skip
            module.exit_json(changed=not module.check_mode, points=listed, drafters=drafters, **written)
        elapsed = time.time() - p["started"] if p["started"] is not None else 0.0
        step = next_step(points, rows, search=p["search"], tolerance=p["tolerance"], elapsed_s=elapsed,
                         conditions=conditions)  # fmt: skip
    except (SweepInputError, ManifestChanged) as error:
        module.fail_json(msg=str(error))
    module.exit_json(
        changed=False,
        points=listed,
        drafters=drafters,
        point=describe(step.point, weights_drafter, conditions) if step.point is not None else None,
        done=step.point is None,
        progress=step.progress,
        index=step.index,
        total=step.total,
        started_row=started_row(step.point, conditions) if step.point is not None else None,
        finished=list(step.finished),
        # not "skipped"/"failed": Ansible reads those keys of a result as the task's own state
        skipped_points=list(step.skipped),
        failed_points=list(step.failed),
        redo=dict(step.redo),
        pruned=dict(step.pruned),
        notes=list(step.notes),
        repeat_rounds=repeat_rounds(p["benchmark_runs"], p["max_repeats"]),
    )


if __name__ == "__main__":
    main()
