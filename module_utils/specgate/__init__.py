"""specgate's logic: plain, typed functions that library/ modules call (imported as ansible.module_utils.specgate.*)."""
