"""Callback: load the filter and test plugins once, in the controller's main process, at playbook start.

Each task runs in a worker forked from the main process. A worker that templates any filter loads every filter plugin
file it finds (ansible's Jinja2Loader loads them all to build its name table), and what it loads dies with it: until
something in the main process has loaded them, every such task pays for the imports again (0.25-0.4 s each here: the
project's plugins import module_utils). Loading them before the first fork lets every worker inherit them. It changes
no output.

It lives in the project's own collection (specgate.project, found through ansible.cfg's collections_path), not in a
callback_plugins directory: ansible-runner, which the tests and Python callers drive playbooks with, sets
ANSIBLE_CALLBACK_PLUGINS to its own directory, and that variable replaces ansible.cfg's callback path, so a callback
there was never loaded in those runs and every task paid the imports.
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader

DOCUMENTATION = r"""
name: plugins_preload
type: aggregate
short_description: Load filter and test plugins once in the main process, so forked task workers inherit them
description:
  - Every task worker is forked from the main process; plugins a worker loads die with it. Loading the filter and
    test plugins at playbook start saves each task that uses a filter the imports.
requirements:
  - enable in ansible.cfg (callbacks_enabled specgate.project.plugins_preload)
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "specgate.project.plugins_preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook) -> None:
        loaded = 0
        for loader in (filter_loader, test_loader):
            for _ in loader.all():
                loaded += 1
        self._display.vvv(f"specgate.project.plugins_preload: {loaded} filter and test plugin files loaded")
