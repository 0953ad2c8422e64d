#!/usr/bin/env bash
# Capture a GPU host's real nvidia-smi/nvcc outputs as test fixtures for gpu_facts and preflight.
# Run it on a GPU box:  scripts/capture_gpu_fixtures.sh <out-dir>
# The query fields are exactly those the gpu_facts module asks for.
set -uo pipefail
out=${1:?usage: capture_gpu_fixtures.sh OUT_DIR}
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version \
    --format=csv,noheader,nounits > "$out/query_gpu.csv" 2> "$out/query_gpu.err"; echo "query rc=$?"
nvidia-smi topo -m > "$out/topo_m.txt" 2>&1; echo "topo rc=$?"
nvidia-smi -q > "$out/smi_q.txt" 2>&1; echo "smi -q rc=$?"
nvidia-smi > "$out/smi.txt" 2>&1; echo "smi rc=$?"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits > "$out/compute_apps_idle.csv" 2>&1
nvcc --version > "$out/nvcc_version.txt" 2>&1; echo "nvcc rc=$?"
probe_dir=$(mktemp -d)
cat > "$probe_dir/probe.cu" <<'CU'
#include <curand_kernel.h>
__global__ void probe(float *out, unsigned long long seed) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, threadIdx.x, 0, &state);
    out[threadIdx.x] = curand_uniform(&state);
}
CU
for arch in sm_90a sm_100a sm_103a sm_120a; do
    if nvcc -arch="$arch" -cubin -o "$probe_dir/probe_$arch.cubin" "$probe_dir/probe.cu" > "$probe_dir/$arch.log" 2>&1; then
        echo "probe $arch: compiled"
    else
        echo "probe $arch: FAILED: $(tail -2 "$probe_dir/$arch.log" | tr '\n' ' ')"
    fi
done | tee "$out/probe_compile.txt"
echo "curand header: $(find / -name curand_kernel.h -not -path '*/proc/*' 2>/dev/null | head -3 | tr '\n' ' ')" >> "$out/probe_compile.txt"
