"""spec_gate: the benchmark (prompts, client, runner, stats, report), the coding eval and the verdict."""
