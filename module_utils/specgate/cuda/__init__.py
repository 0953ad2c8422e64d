"""cuda_toolkit: which CUDA toolkit an arch and an SGLang release need, its plan and its probe."""
