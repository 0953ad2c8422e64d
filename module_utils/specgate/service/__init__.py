"""sglang_service: SGLang's flags and resolver, the release files, the restart protocol's pieces."""
