// CPU entry point for cuda/jpeg_fused.cu under tests/cuda/cuda_emulation.h, compiled after the
// sources it calls into, as the launcher's NVRTC unit (fastprep.kernels.kernel_unit) is.
#include "cuda_emulation.h"
#include "../../cuda/jpeg_idct.cu"
#include "../../cuda/resize.cu"
#include "../../cuda/jpeg_fused.cu"

extern "C" void launch_jpeg_fused_h(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                    const void* coefs, const void* quant, void* dst, const long long* fdesc,
                                    const int* bounds, const int* weights) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_fused_h((const short*)coefs, (const int*)quant, (unsigned char*)dst, fdesc, bounds, weights);
    });
}
