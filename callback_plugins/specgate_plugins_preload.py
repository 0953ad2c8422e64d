"""Callback: load the project's filter and test plugins once, in the controller's main process, at playbook start.

Each task runs in a worker forked from the main process. A worker that templates any filter loads the filter
plugins it finds, and what it loads dies with it: until something in the main process has loaded them, every such
task pays for the imports again (about 0.25 s each here: the plugins import module_utils). Loading them before the
first fork lets every worker inherit them. It changes no output.
"""

from __future__ import annotations

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import filter_loader, test_loader

DOCUMENTATION = r"""
name: specgate_plugins_preload
type: aggregate
short_description: Load filter and test plugins once in the main process, so forked task workers inherit them
description:
  - Every task worker is forked from the main process; plugins a worker loads die with it. Loading the filter and
    test plugins at playbook start saves each task that uses a filter the imports.
requirements:
  - enable in ansible.cfg (callbacks_enabled)
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "specgate_plugins_preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook) -> None:
        for loader in (filter_loader, test_loader):
            for _ in loader.all():
                pass
