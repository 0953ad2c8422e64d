"""Start sglang-router with its API key from the environment, never from the command line (role sglang_router).

sglang-router 0.3.2 takes its key only as `--api-key` (sglang_router/router_args.py), and a process's argv is
readable by every user on the host (/proc/PID/cmdline). systemd reads the key from a root-only EnvironmentFile into
SGLANG_ROUTER_API_KEY (a process's environment is readable only by its own user and root); this moves it into the
arguments inside the process, whose /proc cmdline stays as started, and runs the router's own launcher, what
`python -m sglang_router.launch_router` runs.
"""

import os
import sys

from sglang_router.launch_router import main

key = os.environ.pop("SGLANG_ROUTER_API_KEY", "")  # popped: nothing the router starts inherits it
if key:
    sys.argv += ["--api-key", key]
main()
