// CPU entry point for cuda/normalize.cu under tests/cuda/cuda_emulation.h.
#include "cuda_emulation.h"
#include "../../cuda/normalize.cu"

extern "C" void launch_crop_normalize_u8(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                         unsigned bz, const unsigned char* src, void* dst, const void* lut,
                                         int in_h, int in_w, long long in_pitch, long long in_image_stride,
                                         int out_h, int out_w, int y0, int x0) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        crop_normalize_u8(src, (out_t*)dst, (const out_t*)lut, in_h, in_w, in_pitch, in_image_stride, out_h,
                          out_w, y0, x0);
    });
}
