#!/usr/bin/env bash
# Run the preflight role (gpu_facts + the whole-deployment checks) and the cuda_probe module on a real GPU
# host, against localhost, with ansible-core installed from wheels carried along (the GPU host reaches no
# package index). Run from the repository root on the GPU host:
#
#   scripts/gpu_probe_on_device.sh WHEELHOUSE [NVCC]
#
# WHEELHOUSE holds ansible-core and its dependencies for the host's Python, built on the controller with
#   scripts/build_wheelhouse.py --python-version 3.12 --out .cache/device-wheels ansible-core==2.21.5
# NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc) compiles the curand probe for the GPU's arch.
#
# Prints: the specgate_gpu fact and host facts the role found; that a deployment the GPU can run passes;
# that a deployment it cannot run (more GPUs than present, fa3/trtllm_mla against the arch) is refused naming
# the variables; and the probe's compile result for the GPU's arch. Exits non-zero when any of these is not
# what the hardware implies.
set -euo pipefail
cd "$(dirname "$0")/.."
wheelhouse=${1:?usage: gpu_probe_on_device.sh WHEELHOUSE [NVCC]}
nvcc=${2:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --find-links "$wheelhouse" ansible-core
export PATH="$work/venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_LOCAL_TEMP="$work/tmp"
export ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.default ANSIBLE_FACT_CACHING=memory ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default
echo "localhost ansible_connection=local ansible_python_interpreter=$work/venv/bin/python" > "$work/hosts"

cat > "$work/facts.yml" <<'YAML'
- name: Preflight on the real GPU host
  hosts: localhost
  gather_facts: false
  roles:
    - role: preflight
      vars:
        preflight_min_free_gib: {/tmp: 1}
        preflight_supported_os: []
        preflight_cuda_version: "13.0"
  tasks:
    - name: Print the GPU fact as JSON for the report
      ansible.builtin.copy:
        content: "{{ specgate_gpu | to_nice_json }}"
        dest: "{{ lookup('ansible.builtin.env', 'SPECGATE_GPU_JSON') }}"
        mode: "0644"
YAML
export SPECGATE_GPU_JSON="$work/gpu.json"
ansible-playbook -i "$work/hosts" "$work/facts.yml"
echo "== specgate_gpu"; cat "$work/gpu.json"; echo
arch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["arch"])' "$work/gpu.json")
count=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["count"])' "$work/gpu.json")

# Same table as module_utils/specgate/cuda/cuda_lanes.py and deployment_checks.py.
case "$arch" in
  sm90) good_backend=fa3; bad_backend=trtllm_mla; nvcc_arch=sm_90a; sm=90 ;;
  sm100) good_backend=trtllm_mla; bad_backend=fa3; nvcc_arch=sm_100a; sm=100 ;;
  sm103) good_backend=trtllm_mla; bad_backend=fa3; nvcc_arch=sm_103a; sm=103 ;;
  sm120) good_backend=triton; bad_backend=fa3; nvcc_arch=sm_120a; sm=120 ;;
  *) echo "unexpected arch $arch"; exit 1 ;;
esac

echo "== a deployment this host can run: tp $count, DFLASH, $good_backend"
ansible-playbook -i "$work/hosts" "$work/facts.yml" \
  -e "{\"preflight_tp_size\": $count, \"preflight_speculative_algorithm\": \"DFLASH\", \"preflight_attention_backend\": \"$good_backend\"}" \
  > "$work/good.log" 2>&1 || { cat "$work/good.log"; echo "preflight refused a deployment the host can run"; exit 1; }
grep -A1 "PLAY RECAP" "$work/good.log"

echo "== a deployment it cannot run: tp $((count * 2)), DFLASH with pp 2, $bad_backend"
if ansible-playbook -i "$work/hosts" "$work/facts.yml" \
  -e "{\"preflight_tp_size\": $((count * 2)), \"preflight_pp_size\": 2, \"preflight_speculative_algorithm\": \"DFLASH\", \"preflight_attention_backend\": \"$bad_backend\"}" \
  > "$work/bad.log" 2>&1; then
  echo "preflight accepted a deployment the host cannot run"; exit 1
fi
grep -o 'preflight_[a-z_]*: [^\\"]*' "$work/bad.log" | sort -u
for variable in preflight_tp_size preflight_pp_size preflight_attention_backend; do
  grep -q "$variable:" "$work/bad.log" || { echo "refusal did not name $variable"; exit 1; }
done

echo "== cuda_probe with $nvcc for $nvcc_arch"
cp roles/cuda_toolkit/files/probe.cu "$work/probe.cu"
ansible -i "$work/hosts" localhost -m cuda_probe -a \
  "nvcc=$nvcc source=$work/probe.cu output=$work/probe-$nvcc_arch.cubin nvcc_arch=$nvcc_arch sm=$sm expected_version=13.0"
echo "gpu_probe_on_device: all checks passed"
