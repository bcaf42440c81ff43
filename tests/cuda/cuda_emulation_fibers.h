// The exact mode of tests/cuda/cuda_emulation.h (a harness defines EMU_FIBERS before including
// it): every CUDA thread of a block is a fiber (ucontext) with its own stack, and a thread that
// reaches `__syncthreads()`, a warp operation (`__shfl*_sync`, `__ballot_sync`) or
// `__nanosleep()` gives way to the others. A barrier opens when every live thread of the block
// waits at one; a warp operation completes when every lane its mask names waits at it, and each
// lane then gets what the hardware gives it. Unlike the phase mode this runs code between
// barriers once, so kernels with atomics, warp shuffles and shared-memory updates after the first
// barrier are emulated exactly. A block that can no longer progress (a barrier or a warp
// operation some thread never reaches, lanes of one warp at different operations) stops the
// launch: `emu_error` then says why and the harness reports it instead of hanging.
#pragma once
#include <ucontext.h>

#include <cstdio>
#include <vector>

enum EmuWait { EMU_READY, EMU_BARRIER, EMU_WARP, EMU_DONE };
enum EmuWarpOp { EMU_SHFL, EMU_SHFL_UP, EMU_SHFL_DOWN, EMU_SHFL_XOR, EMU_BALLOT };

struct EmuFiber {
    ucontext_t ctx;
    EmuWait wait = EMU_DONE;
    uint3 idx;
    int op = 0;
    unsigned mask = 0;
    long long value = 0;  // what the thread brings to the operation
    int param = 0;
    long long result = 0;  // what it gets back
};

static std::vector<EmuFiber> emu_fibers;
static std::vector<char> emu_stacks;
static ucontext_t emu_scheduler;
static unsigned emu_current = 0;
static void* emu_kernel = nullptr;
static void (*emu_call)(void*) = nullptr;
static char emu_error[256] = "";
static const size_t EMU_STACK = 256 * 1024;

static void emu_fiber_main() {
    emu_call(emu_kernel);
    emu_fibers[emu_current].wait = EMU_DONE;
    // returning resumes uc_link: the scheduler
}

static long long emu_yield(EmuWait why) {
    EmuFiber& f = emu_fibers[emu_current];
    f.wait = why;
    swapcontext(&f.ctx, &emu_scheduler);
    return emu_fibers[emu_current].result;
}

inline void __syncthreads() { emu_yield(EMU_BARRIER); }
// The reductions of __syncthreads_or / _count / _and: the value is the predicate.
inline int __syncthreads_or(int pred) {
    emu_fibers[emu_current].value = pred != 0;
    emu_fibers[emu_current].op = 1;
    return (int)emu_yield(EMU_BARRIER);
}
inline int __syncthreads_count(int pred) {
    emu_fibers[emu_current].value = pred != 0;
    emu_fibers[emu_current].op = 2;
    return (int)emu_yield(EMU_BARRIER);
}
inline void __nanosleep(unsigned) { emu_yield(EMU_READY); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    EmuFiber& f = emu_fibers[emu_current];
    f.op = EMU_BALLOT;
    f.mask = mask;
    f.value = 0;
    emu_yield(EMU_WARP);
}

static long long emu_warp(int op, unsigned mask, long long value, int param) {
    EmuFiber& f = emu_fibers[emu_current];
    f.op = op;
    f.mask = mask;
    f.value = value;
    f.param = param;
    return emu_yield(EMU_WARP);
}

template <typename T>
inline T emu_from(long long v) {
    T out;
    static_assert(sizeof(T) <= sizeof(long long), "warp values up to 8 bytes");
    __builtin_memcpy(&out, &v, sizeof(T));
    return out;
}
template <typename T>
inline long long emu_to(T v) {
    long long out = 0;
    __builtin_memcpy(&out, &v, sizeof(T));
    return out;
}

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    (void)width;
    return emu_from<T>(emu_warp(EMU_SHFL, mask, emu_to(v), src));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    (void)width;
    return emu_from<T>(emu_warp(EMU_SHFL_UP, mask, emu_to(v), (int)delta));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    (void)width;
    return emu_from<T>(emu_warp(EMU_SHFL_DOWN, mask, emu_to(v), (int)delta));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    (void)width;
    return emu_from<T>(emu_warp(EMU_SHFL_XOR, mask, emu_to(v), lane_mask));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return (unsigned)emu_warp(EMU_BALLOT, mask, pred != 0, 0);
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }

// Completes warp operations whose lanes are all there; false if none could complete.
static bool emu_resolve_warps(unsigned nthreads) {
    bool any = false;
    for (unsigned w0 = 0; w0 < nthreads; w0 += 32) {
        const unsigned lanes = nthreads - w0 < 32 ? nthreads - w0 : 32;
        int first = -1;
        for (unsigned l = 0; l < lanes; ++l)
            if (emu_fibers[w0 + l].wait == EMU_WARP) {
                first = (int)l;
                break;
            }
        if (first < 0) continue;
        const EmuFiber& f0 = emu_fibers[w0 + first];
        bool ready = true;
        for (unsigned l = 0; l < lanes; ++l) {
            if (!(f0.mask >> l & 1)) continue;
            const EmuFiber& f = emu_fibers[w0 + l];
            if (f.wait == EMU_DONE || f.wait == EMU_BARRIER) {
                snprintf(emu_error, sizeof emu_error, "warp %u: lane %u of mask %08x %s", w0 / 32, l, f0.mask,
                         f.wait == EMU_DONE ? "has exited" : "waits at a barrier");
                return false;
            }
            if (f.wait != EMU_WARP) ready = false;
            else if (f.op != f0.op || f.mask != f0.mask) {
                snprintf(emu_error, sizeof emu_error, "warp %u: lanes at different warp operations", w0 / 32);
                return false;
            }
        }
        if (!ready) continue;
        unsigned ballot = 0;
        for (unsigned l = 0; l < lanes; ++l)
            if ((f0.mask >> l & 1) && emu_fibers[w0 + l].value) ballot |= 1u << l;
        for (unsigned l = 0; l < lanes; ++l) {
            if (!(f0.mask >> l & 1)) continue;
            EmuFiber& f = emu_fibers[w0 + l];
            int src = (int)l;
            switch (f.op) {
                case EMU_SHFL: src = f.param & 31; break;
                case EMU_SHFL_UP: src = (int)l - f.param >= 0 ? (int)l - f.param : (int)l; break;
                case EMU_SHFL_DOWN: src = (int)l + f.param < 32 ? (int)l + f.param : (int)l; break;
                case EMU_SHFL_XOR: src = ((int)l ^ f.param) & 31; break;
                default: break;
            }
            if (f.op == EMU_BALLOT) {
                f.result = ballot;
            } else {
                // a source lane outside the mask or the block: undefined on the GPU; its own value here
                const bool ok = (unsigned)src < lanes && (f0.mask >> src & 1);
                f.result = ok ? emu_fibers[w0 + src].value : f.value;
            }
        }
        for (unsigned l = 0; l < lanes; ++l)
            if (f0.mask >> l & 1) emu_fibers[w0 + l].wait = EMU_READY;
        any = true;
    }
    return any;
}

// Runs one block to its end; false (and emu_error) if it cannot progress.
static bool emu_run_block(unsigned nthreads) {
    for (;;) {
        bool ran = false;
        for (unsigned t = 0; t < nthreads; ++t) {
            if (emu_fibers[t].wait != EMU_READY) continue;
            emu_current = t;
            threadIdx = emu_fibers[t].idx;
            swapcontext(&emu_scheduler, &emu_fibers[t].ctx);
            ran = true;
        }
        unsigned done = 0, barrier = 0, warp = 0, ready = 0;
        for (unsigned t = 0; t < nthreads; ++t) {
            const EmuWait w = emu_fibers[t].wait;
            done += w == EMU_DONE;
            barrier += w == EMU_BARRIER;
            warp += w == EMU_WARP;
            ready += w == EMU_READY;
        }
        if (done == nthreads) return true;
        if (ready) continue;  // threads that slept
        if (warp) {
            if (emu_resolve_warps(nthreads)) continue;
            if (emu_error[0]) return false;
        }
        if (barrier && !warp) {
            // every live thread waits at a barrier (exited threads do not hold it up)
            long long any = 0, count = 0;
            for (unsigned t = 0; t < nthreads; ++t)
                if (emu_fibers[t].wait == EMU_BARRIER) {
                    any |= emu_fibers[t].value;
                    count += emu_fibers[t].value;
                }
            for (unsigned t = 0; t < nthreads; ++t)
                if (emu_fibers[t].wait == EMU_BARRIER) {
                    EmuFiber& f = emu_fibers[t];
                    f.result = f.op == 2 ? count : any;
                    f.op = 0;
                    f.value = 0;
                    f.wait = EMU_READY;
                }
            continue;
        }
        if (!ran) {
            snprintf(emu_error, sizeof emu_error,
                     "block (%u,%u,%u) is stuck: %u threads at a barrier, %u at warp operations, %u done", blockIdx.x,
                     blockIdx.y, blockIdx.z, barrier, warp, done);
            return false;
        }
    }
}

// A fresh fiber for thread t (getcontext returns twice: kept out of the launch loop's frame).
__attribute__((noinline)) static void emu_make_fiber(unsigned t, uint3 idx) {
    EmuFiber& f = emu_fibers[t];
    f = EmuFiber();
    f.idx = idx;
    f.wait = EMU_READY;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = emu_stacks.data() + t * EMU_STACK;
    f.ctx.uc_stack.ss_size = EMU_STACK;
    f.ctx.uc_link = &emu_scheduler;
    makecontext(&f.ctx, emu_fiber_main, 0);
}

// Runs the grid; 0, or -1 with emu_error set.
template <typename F>
int emu_launch(dim3 grid, dim3 block, F&& kernel) {
    gridDim = grid;
    blockDim = block;
    emu_error[0] = 0;
    const unsigned n = block.x * block.y * block.z;
    emu_fibers.assign(n, EmuFiber());
    if (emu_stacks.size() < n * EMU_STACK) emu_stacks.assign(n * EMU_STACK, 0);
    emu_kernel = (void*)&kernel;
    emu_call = [](void* k) { (*(F*)k)(); };
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = {bx, by, bz};
                unsigned t = 0;
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx, ++t) {
                            emu_make_fiber(t, {tx, ty, tz});
                        }
                if (!emu_run_block(n)) {
                    emu_kernel = nullptr;
                    return -1;
                }
            }
    emu_kernel = nullptr;  // the kernel object lives in the caller's frame
    return 0;
}
