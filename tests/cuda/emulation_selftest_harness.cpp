// CPU entry points for tests/cuda/emulation_selftest.cu in the exact (fiber) mode.
#define EMU_FIBERS 1
#include "cuda_emulation.h"
#include "emulation_selftest.cu"

extern "C" const char* emu_last_error() { return emu_error; }

#define LAUNCHER(name)                                                                                 \
    extern "C" int launch_##name(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,       \
                                 unsigned bz, const int* in, int* out) {                                \
        return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] { name(in, out); });                         \
    }

LAUNCHER(warp_ops)
LAUNCHER(partial_warp)
LAUNCHER(broken_warp)
