// specgate's toolkit probe: what FlashInfer's sampling JIT needs, in miniature. It includes the curand
// device API (the header that was missing on Blackwell) and uses it in a kernel, so compiling it for the
// host's arch proves nvcc, the arch target and the curand headers together.
#include <curand_kernel.h>

extern "C" __global__ void specgate_probe(float *out, unsigned long long seed) {
  curandStatePhilox4_32_10_t state;
  curand_init(seed, threadIdx.x, 0, &state);
  out[threadIdx.x] = curand_uniform(&state);
}
