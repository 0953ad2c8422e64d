"""specgate-sim: what the demo and the tests run where there is no GPU and no hub.

- ``python -m specgate_sim.launch_server``: a simulated SGLang 0.5.23 server (same flags, same HTTP
  contract) with a parametric speculative-decoding model and fault switches.
- ``python -m specgate_sim.calibrate``: the sim's reproduction of the field-notes numbers.

Never point it at a real host or read its numbers as a benchmark of real hardware.
"""

SGLANG_VERSION = "0.5.23"
