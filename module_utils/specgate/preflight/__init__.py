"""preflight: the host's GPUs, disks, RAM and OS, and the checks of the host itself."""
