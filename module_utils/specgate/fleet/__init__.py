"""sglang_router: replicas behind sglang-router - its worker API, the min-healthy guard, draining a worker."""
