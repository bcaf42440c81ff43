// CPU entry points for cuda/resize.cu under tests/cuda/cuda_emulation.h (built by
// tests/cuda_emu.py with the same preamble defines the GPU launcher uses). resize_hv's staged
// horizontal phase (HV_STAGE, resize.cu's default) refills shared memory after barriers, which
// the emulation's phase mode would not replay exactly: such a build takes the exact (fiber) mode.
// The launcher passes HV_STAGE 0 with the other kernels, which keep the faster phase mode.
#if !defined(HV_STAGE) || HV_STAGE
#define EMU_FIBERS 1
#endif
#include "cuda_emulation.h"
#include "../../cuda/resize.cu"

#define LAUNCHER(name)                                                                          \
    extern "C" void launch_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                                  unsigned bz, const void* src, void* dst, const long long* desc,  \
                                  const int* bounds, const void* weights) {                        \
        emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {                                               \
            name((const src_t*)src, (dst_t*)dst, desc, bounds, (const weight_t*)weights);          \
        });                                                                                        \
    }

LAUNCHER(resize_horizontal)
LAUNCHER(resize_vertical)

extern "C" void launch_resize_vertical_lut(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                           unsigned bz, const void* src, void* dst, const long long* desc,
                                           const int* bounds, const void* weights, const void* lut) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        resize_vertical_lut((const src_t*)src, (dst_t*)dst, desc, bounds, (const weight_t*)weights,
                            (const dst_t*)lut);
    });
}

extern "C" void launch_resize_hv(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 const void* src, void* dst, const long long* rdesc, const int* hbounds,
                                 const void* hweights, const int* vbounds, const void* vweights, const void* lut) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        resize_hv((const src_t*)src, (dst_t*)dst, rdesc, hbounds, (const weight_t*)hweights, vbounds,
                  (const weight_t*)vweights, (const dst_t*)lut);
    });
}
