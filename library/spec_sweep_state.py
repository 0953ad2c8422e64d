#!/usr/bin/python
"""Ansible module (controller only): the sweep's next point from the rows so far, or the sweep's report."""

from __future__ import annotations

import time
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.specgate.sweep.resume import load_rows
from ansible.module_utils.specgate.sweep.run import (
    SweepInputError,
    describe,
    drafter_of,
    next_step,
    points_of,
    report,
    started_row,
    sweep_drafters,
)

DOCUMENTATION = r"""
---
module: spec_sweep_state
short_description: The sweep's next point to launch from the rows on the controller, or its report
description:
  - "Runs on the controller only (C(delegate_to: localhost)): the sweep's rows live there, and the sweep package
    it uses needs the controller's venv (jinja2 for the grid's constraints, matplotlib for the plots)."
  - C(state=next) expands I(grid) (or takes I(configs)), reads the rows written so far in I(dir)
    (C(NN-<name>.json)), and answers the point to launch next - the first unfinished one, or in I(search) mode the
    search's next proposal - with the progress line to print as it starts. A point whose row is finished (ran,
    crashed on start, or rejected before any launch) is not launched again; a point whose row says started (the
    sweep was interrupted mid-bench) is redone. Changes nothing.
  - C(state=report) writes sweep.md (embedding the plots), sweep.json and PNG plots in I(dir) from the rows that
    stand, with the winner per use case by the robust pick (the cheapest config within I(tolerance) of the best
    noise-aware score) and the inventory snippet that deploys each winner.
  - Bad sweep settings fail naming the variable (spec_sweep_grid, spec_sweep_configs, spec_sweep_search,
    spec_sweep_tolerance, model_weights_drafters) and the fix.
  - Every answer lists I(drafters), the drafters the points need besides the weights stage's own, once each; the
    weights stage downloads them before the first launch (model_weights_sweep_drafters).
  - Check mode is supported; with C(state=report) it works the report out and writes nothing.
version_added: "0.2.0"
author: specgate
options:
  state:
    description: C(next) for the point to launch next, C(report) to write the report.
    type: str
    choices: [next, report]
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
    description: The robust pick's and the search's tolerance, a fraction of the best score.
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
  sweep_id:
    description: The sweep's name, for the report's title (C(state=report)).
    type: str
    default: sweep
  host:
    description: The host swept, for the report's title (C(state=report)).
    type: str
    default: ""
"""

EXAMPLES = r"""
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
points:
  description: Every point of the sweep in order, each C({name, file, vars, key, cost, drafter}); C(drafter) is
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
  description: Search mode, per branch not expanded, why.
  type: dict
  returned: state=next
notes:
  description: Search mode, once done, where the search could have missed a winner.
  type: list
  elements: str
  returned: state=next
winners:
  description: Per use case, the robust pick with its notes, inventory snippet and out-of-distribution warning.
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
            "state": {"type": "str", "choices": ["next", "report"], "default": "next"},
            "dir": {"type": "path", "required": True},
            "grid": {"type": "raw"},
            "configs": {"type": "list", "elements": "dict", "default": []},
            "search": {"type": "bool", "default": False},
            "tolerance": {"type": "float", "default": 0.01},
            "started": {"type": "float"},
            "weights_drafter": {"type": "dict"},
            "drafters_catalog": {"type": "dict", "default": {}},
            "sweep_id": {"type": "str", "default": "sweep"},
            "host": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    p = module.params
    directory = Path(p["dir"])
    try:
        weights_drafter = drafter_of(p["weights_drafter"])
        points = points_of(p["grid"], p["configs"], weights_drafter=weights_drafter, catalog=p["drafters_catalog"])
        rows = load_rows(directory) if directory.is_dir() else []
        listed = [describe(points, q, weights_drafter) for q in points]
        drafters = sweep_drafters(points, weights_drafter)
        if p["state"] == "report":
            written = report(directory, p["sweep_id"], p["host"], points, rows, search=p["search"],
                             tolerance=p["tolerance"], write=not module.check_mode)  # fmt: skip
            module.exit_json(changed=not module.check_mode, points=listed, drafters=drafters, **written)
        elapsed = time.time() - p["started"] if p["started"] is not None else 0.0
        step = next_step(points, rows, search=p["search"], tolerance=p["tolerance"], elapsed_s=elapsed)
    except SweepInputError as error:
        module.fail_json(msg=str(error))
    module.exit_json(
        changed=False,
        points=listed,
        drafters=drafters,
        point=describe(points, step.point, weights_drafter) if step.point is not None else None,
        done=step.point is None,
        progress=step.progress,
        index=step.index,
        total=step.total,
        started_row=started_row(step.point) if step.point is not None else None,
        finished=list(step.finished),
        # not "skipped"/"failed": Ansible reads those keys of a result as the task's own state
        skipped_points=list(step.skipped),
        failed_points=list(step.failed),
        redo=dict(step.redo),
        pruned=dict(step.pruned),
        notes=list(step.notes),
    )


if __name__ == "__main__":
    main()
