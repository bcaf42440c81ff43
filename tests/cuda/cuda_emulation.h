// Runs CUDA kernel sources on the CPU for the tests: the kernel's own text compiled as C++, with
// blockIdx/threadIdx as thread-local variables that `emu_launch` steps through every block and
// thread of the grid, one thread after another. What this checks is the kernels' arithmetic and
// indexing; the launch code and NVRTC compilation are checked separately.
//
// Barriers: `__shared__` arrays are static (blocks run one after another, so one block's shared
// memory at a time), and a block runs in phases. In phase p every thread runs from its start to
// its (p+1)-th `__syncthreads()` and is cut off there (longjmp), so that when phase p+1 starts,
// everything every thread wrote before barrier p is in place; the last phase, in which no thread
// reaches a barrier it has not passed before, runs every thread to its end. This is exact for
// kernels whose code before each barrier is idempotent (it stores the same values when run
// again: cooperative loads into shared memory) and that write shared memory only before their
// first barrier — what the kernels here do; a kernel that breaks the rule must not rely on this.
#pragma once
#include <csetjmp>
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
#define __align__(n) alignas(n)
#define __restrict__ __restrict
#define __shared__ static
#define __constant__ static const

#ifndef EMU_FIBERS
static thread_local std::jmp_buf emu_cut;
static thread_local int emu_phase = 0;     // the barrier at which this phase cuts threads off
static thread_local int emu_barriers = 0;  // barriers the running thread has reached
static thread_local bool emu_was_cut = false;

inline void __syncthreads() {
    if (emu_barriers++ == emu_phase) {
        emu_was_cut = true;
        std::longjmp(emu_cut, 1);
    }
}

// One thread of the block in the current phase; true if a barrier cut it off. (setjmp in a frame
// of its own, with no locals that change after it, so nothing can be clobbered by the jump.)
template <typename F>
bool emu_run_thread(F& kernel) {
    emu_barriers = 0;
    emu_was_cut = false;
    // The kernels hold no objects with destructors, so jumping out of them skips nothing.
    if (setjmp(emu_cut) == 0) kernel();
    return emu_was_cut;
}

template <typename F>
void emu_launch(dim3 grid, dim3 block, F&& kernel) {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                for (emu_phase = 0;; ++emu_phase) {
                    bool cut = false;
                    for (unsigned tz = 0; tz < block.z; ++tz)
                        for (unsigned ty = 0; ty < block.y; ++ty)
                            for (unsigned tx = 0; tx < block.x; ++tx) {
                                blockIdx = {bx, by, bz};
                                threadIdx = {tx, ty, tz};
                                cut = emu_run_thread(kernel) || cut;
                            }
                    if (!cut) break;
                }
            }
}
#endif  // EMU_FIBERS

// Atomics and fences. The emulation runs one CUDA thread at a time and switches only at the
// points named below (barriers, warp operations, __nanosleep), so a plain read-modify-write is
// atomic here.
template <typename T>
inline T atomicAdd(T* p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
template <typename T>
inline T atomicOr(T* p, T v) {
    T old = *p;
    *p = old | v;
    return old;
}
template <typename T>
inline T atomicMax(T* p, T v) {
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
inline void __threadfence() {}

#ifdef EMU_FIBERS
#include "cuda_emulation_fibers.h"
#endif
