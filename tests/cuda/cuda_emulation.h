// Runs CUDA kernel sources on the CPU for the tests: the kernel's own text compiled as C++, with
// blockIdx/threadIdx as thread-local variables that `emu_launch` steps through every block and
// thread of the grid (sequentially: the kernels here have no shared memory or barriers, so the
// order does not matter). What this checks is the kernels' arithmetic and indexing; the launch
// code and NVRTC compilation are checked separately.
#pragma once
#include <cstdint>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct uint3 {
    unsigned x = 0, y = 0, z = 0;
};

static thread_local uint3 blockIdx, threadIdx;
static thread_local dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict

template <typename F>
void emu_launch(dim3 grid, dim3 block, F&& kernel) {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx)
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            blockIdx = {bx, by, bz};
                            threadIdx = {tx, ty, tz};
                            kernel();
                        }
}
