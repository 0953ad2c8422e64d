"""Vars plugin: specgate_project_dir, the specgate checkout this plugin sits in, for every host.

Roles find the project's own files (templates/, reports/) through this one variable. It used to be
`ansible_config_file | dirname` in each role's defaults: that is the project only while the project's own ansible.cfg
is the one in use, and undefined without one (a playbook of the user's own that lists specgate's roles). Inventory
and extra vars override it like any group_vars/all value; a run without it is refused at the first stage's validate
(specgate_declared_variables), naming the variable.
"""

from __future__ import annotations

from pathlib import Path

from ansible.inventory.group import Group
from ansible.plugins.vars import BaseVarsPlugin

DOCUMENTATION = r"""
name: project_dir
short_description: Set specgate_project_dir to the specgate checkout that holds this collection
description:
  - Gives the inventory's C(all) group the variable specgate_project_dir, the directory of the specgate checkout
    (the one holding templates/ and ansible.cfg), found from this file's own place in local_collections/.
requirements:
  - enable in ansible.cfg (vars_plugins_enabled host_group_vars, specgate.project.project_dir)
"""

# local_collections/ansible_collections/specgate/project/plugins/vars/project_dir.py: the checkout is six levels up.
PROJECT_DIR = str(Path(__file__).resolve().parents[6])


class VarsModule(BaseVarsPlugin):
    # One instance serves every call: without it ansible-core loads the plugin, and parses its DOCUMENTATION, again each
    # time it gathers a host's variables (a few times per task).
    is_stateless = True

    def get_vars(self, loader, path, entities, cache=True):
        super().get_vars(loader, path, entities)
        entities = entities if isinstance(entities, list) else [entities]
        if any(isinstance(entity, Group) and entity.name == "all" for entity in entities):
            return {"specgate_project_dir": PROJECT_DIR}
        return {}
