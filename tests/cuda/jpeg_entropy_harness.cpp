// CPU entry points for cuda/jpeg_entropy.cu under tests/cuda/cuda_emulation.h in its exact
// (fiber) mode: the kernels use warp shuffles, atomics and block-wide reductions. Each returns 0,
// or -1 with the reason in emu_last_error().
#define EMU_FIBERS 1
#include "cuda_emulation.h"
#include "../../cuda/jpeg_entropy.cu"

typedef unsigned char u8;

extern "C" const char* emu_last_error() { return emu_error; }

extern "C" int launch_jpeg_unstuff_count(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                         const u8* src, const long long* desc, const int* tile_img, int n_tiles,
                                         int* tile_cnt) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] { jpeg_unstuff_count(src, desc, tile_img, n_tiles, tile_cnt); });
}

extern "C" int launch_jpeg_tile_offsets(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                        const long long* desc, int n_images, int* tile_cnt, long long* img_info) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] { jpeg_tile_offsets(desc, n_images, tile_cnt, img_info); });
}

extern "C" int launch_jpeg_unstuff_write(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                         const u8* src, const long long* desc, const int* tile_img, int n_tiles,
                                         const int* tile_cnt, u8* bits, int* seg_start, int* status) {
    return emu_launch({gx, gy, gz}, {bx, by, bz},
                      [&] { jpeg_unstuff_write(src, desc, tile_img, n_tiles, tile_cnt, bits, seg_start, status); });
}

extern "C" int launch_jpeg_chunk_layout(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                        const long long* desc, int n_images, const long long* img_info,
                                        int* seg_start, int* seg_chunk0, int* chunk_seg, int* status) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_chunk_layout(desc, n_images, img_info, seg_start, seg_chunk0, chunk_seg, status);
    });
}

extern "C" int launch_jpeg_sync(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                const u8* bits, const long long* desc, const int* tables, const long long* img_info,
                                const int* seg_start, const int* seg_chunk0, const int* chunk_seg,
                                const int* block_img, int* ticket, int* done, long long* exits, long long* ch_pos,
                                int* ch_val, int* status) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_sync(bits, desc, tables, img_info, seg_start, seg_chunk0, chunk_seg, block_img, ticket, done, exits,
                  ch_pos, ch_val, status);
    });
}

extern "C" int launch_jpeg_chunk_scan(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                      const long long* desc, const int* chunk_seg, int* ch_val, int* status) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] { jpeg_chunk_scan(desc, chunk_seg, ch_val, status); });
}

extern "C" int launch_jpeg_write(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 const u8* bits, const long long* desc, const int* tables, const long long* img_info,
                                 const int* seg_start, const int* seg_chunk0, const int* chunk_seg,
                                 const int* block_img, const long long* ch_pos, const int* ch_val, short* coefs,
                                 int* status) {
    return emu_launch({gx, gy, gz}, {bx, by, bz}, [&] {
        jpeg_write(bits, desc, tables, img_info, seg_start, seg_chunk0, chunk_seg, block_img, ch_pos, ch_val, coefs,
                   status);
    });
}
