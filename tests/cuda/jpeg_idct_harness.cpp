// CPU entry points for cuda/jpeg_idct.cu under tests/cuda/cuda_emulation.h.
#include "cuda_emulation.h"
#include "../../cuda/jpeg_idct.cu"

extern "C" void launch_jpeg_idct(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 const void* coefs, const void* quant, void* planes, const long long* pdesc) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_idct((const short*)coefs, (const int*)quant, (unsigned char*)planes, pdesc);
    });
}

extern "C" void launch_jpeg_color(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                  const void* planes, void* dst, const long long* idesc) {
    emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_color((const unsigned char*)planes, (unsigned char*)dst, idesc);
    });
}
