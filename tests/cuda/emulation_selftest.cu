// Kernels that check the exact (fiber) mode of tests/cuda/cuda_emulation.h against what CUDA
// defines for warp shuffles, ballots, barrier reductions and atomics (tests/test_cuda_emulation.py
// computes the expected values; tests/test_cuda_nvrtc.py compiles this text too).

// One block of 64 threads (two warps); out gets 10 values per thread.
extern "C" __global__ void warp_ops(const int* in, int* out) {
    __shared__ int sum;
    __shared__ int order[64];
    const int t = threadIdx.x, lane = t & 31;
    const int v = in[t];
    int* o = out + t * 10;
    o[0] = __shfl_sync(0xffffffffu, v, (lane * 7 + 3) & 31);
    o[1] = __shfl_up_sync(0xffffffffu, v, 3);
    o[2] = __shfl_down_sync(0xffffffffu, v, 5);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 9);
    o[4] = (int)__ballot_sync(0xffffffffu, v & 1);
    o[5] = __syncthreads_or(v == 7);
    o[6] = __syncthreads_count(v & 1);
    // shared memory written between barriers, atomically, after the first one
    if (t == 0) sum = 0;
    __syncthreads();
    atomicAdd(&sum, v);
    order[t] = atomicAdd(&sum, 0) >= 0;
    __syncthreads();
    o[7] = sum;
    o[8] = order[63 - t];
    // a 64-bit value through a shuffle
    const long long big = (long long)v << 33 | lane;
    o[9] = (int)(__shfl_sync(0xffffffffu, big, 31 - lane) >> 33);
}

// Only the even lanes of each warp take part.
extern "C" __global__ void partial_warp(const int* in, int* out) {
    const int t = threadIdx.x, lane = t & 31;
    if (lane & 1) return;
    out[t] = __shfl_sync(0x55555555u, in[t], (lane + 2) & 31);
}

// A shuffle whose mask names a lane that has exited: undefined on the GPU, an error here.
extern "C" __global__ void broken_warp(const int* in, int* out) {
    const int t = threadIdx.x;
    if (t == 5) return;
    out[t] = __shfl_sync(0xffffffffu, in[t], 0);
}
