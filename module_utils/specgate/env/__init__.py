"""sglang_env: the venv's plan, the engine it holds, its patches and its fingerprint."""
