"""The one variable through which roles find the project's own files (templates/, reports/): specgate_project_dir.

Set for every host by the project's vars plugin (specgate.project.project_dir) to the checkout. A run without it - a
playbook of the user's own, under its own ansible.cfg, that lists specgate's roles - is refused when the stage's
argument specs are checked (the first thing each entry point does), before anything changes, naming the variable
and the fix.
"""

from __future__ import annotations

PROJECT_DIR_VAR = "specgate_project_dir"


class ProjectDirUnset(ValueError):
    """specgate_project_dir is not set, and a path of the project was asked for."""


def project_path(project_dir: str | None, relative: str) -> str:
    """`relative` (templates/x.j2) in the checkout; without one, ProjectDirUnset naming the variable and the fix."""
    if not project_dir or not str(project_dir).strip():
        raise ProjectDirUnset(
            f"{PROJECT_DIR_VAR} is unset, so the project's {relative} cannot be found. Fix: run with the project's "
            f"ansible.cfg (its vars plugin specgate.project.project_dir sets it to the checkout), or set "
            f"{PROJECT_DIR_VAR} to the specgate checkout (the directory holding templates/) in group_vars/all"
        )
    return f"{str(project_dir).rstrip('/')}/{relative}" if relative else str(project_dir).rstrip("/")
