// JPEG decoding fused with the horizontal resize pass: dequantization and IDCT, chroma upsampling,
// YCbCr -> RGB and Pillow's horizontal pass in one kernel, so that neither the component planes
// nor the full-resolution RGB image are written to (and read back from) device memory; only the
// horizontally resized rows are (the crop window's columns, the rows the vertical pass reads).
//
// The launcher compiles this file after jpeg_idct.cu and resize.cu (uint8, 3 channels, no
// premultiplication: resize.cu's defaults) and calls their functions, so every value is computed
// by the same code as in the three-kernel path: idct_islow / idct_4x4 / idct_2x2, sample_at,
// ycc_rgb and resample_pixel. The result is that path's byte for byte (the tests run both).
//
// Kernel `jpeg_fused_h`: one block per (column tile, row strip, image), grid (x, y, z). A block
// 1. IDCTs into shared memory the 8x8 blocks of each component that its strip's pixels sample
//    (with the neighbouring sample rows and columns the fancy upsamplers read),
// 2. upsamples and colour-converts the strip's source pixels (the columns its outputs' taps read)
//    into an RGB strip in shared memory, in the oriented image's order,
// 3. writes its outputs of the horizontal pass from the RGB strip (resample_pixel).
// Only EXIF orientations 1-4 (flips, no transposition) are fused: there, oriented rows are decoded
// rows; the launcher sends the others, and images resized vertically first, the three-kernel way.
//
// fdesc[n * FDESC_LEN + field] (int64) for image n: first resize.cu's DESC_LEN fields of the
// horizontal pass (F_SRC .. F_SC unused), then
//   FD_W, FD_H     the decoded image (before orientation); FD_NCOMP 1 (gray) or 3 (YCbCr)
//   FD_FLIPX, FD_FLIPY  the orientation's flips
//   FD_TX          output columns per block; FD_R rows per strip; FD_ORG the oriented row where
//                  strip 0 starts (at or above F_FIRST: strips are aligned to the decoded image's
//                  iMCU rows, so that a strip IDCTs no luma block twice)
//   then for each component c at FD_COMP + c * FC_LEN:
//     FC_COEF, FC_QUANT  element offsets of its first block in `coefs` and of its 64 multipliers
//                        in `quant` (as jpeg_idct.cu's P_COEF, P_QUANT)
//     FC_WB, FC_HB       blocks per row, block rows; FC_SCALE its DCT scale (8, 4, 2, 1)
//     FC_DW, FC_DH, FC_MODE, FC_HX, FC_VY  as jpeg_idct.cu's C_DW .. C_VY
// The launcher chooses FD_TX and FD_R so that every block's shared memory fits FUSED_SMEM (it
// computes a bound over the image's tiles with the same window arithmetic); a block that would
// not fit returns without writing, which the launcher's bound rules out.
#define FD_W (DESC_LEN + 0)
#define FD_H (DESC_LEN + 1)
#define FD_NCOMP (DESC_LEN + 2)
#define FD_FLIPX (DESC_LEN + 3)
#define FD_FLIPY (DESC_LEN + 4)
#define FD_TX (DESC_LEN + 5)
#define FD_R (DESC_LEN + 6)
#define FD_ORG (DESC_LEN + 7)
#define FD_COMP (DESC_LEN + 8)
#define FC_LEN 10
#define FC_COEF 0
#define FC_QUANT 1
#define FC_WB 2
#define FC_HB 3
#define FC_SCALE 4
#define FC_DW 5
#define FC_DH 6
#define FC_MODE 7
#define FC_HX 8
#define FC_VY 9
#define FDESC_LEN (FD_COMP + 3 * FC_LEN)

#ifndef FUSED_SMEM
#define FUSED_SMEM 45056
#endif

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int imax(int a, int b) { return a > b ? a : b; }

// The sample indices [lo, hi) along one axis of a plane that pixels [a, b) of the decoded image
// read: `kind` 0 the same indices, 1 replicated by `f`, 2 fancy (half, with a neighbour on each
// side, clamped to the plane's `n` real samples).
__device__ __forceinline__ void axis_range(int kind, int f, int a, int b, int n, int* lo, int* hi) {
    if (kind == 0) {
        *lo = a;
        *hi = b;
    } else if (kind == 1) {
        *lo = a / f;
        *hi = (b - 1) / f + 1;
    } else {
        *lo = clampi((a >> 1) - 1, 0, n - 1);
        *hi = clampi(((b - 1) >> 1) + 1, 0, n - 1) + 1;
    }
}

// A component's window in shared memory: whole blocks [bx0, bx0 + nbx) x [by0, by0 + nby).
struct Window {
    int bx0, by0, nbx, nby, s, off;
};

extern "C" __global__ void jpeg_fused_h(const short* __restrict__ coefs, const int* __restrict__ quant,
                                        unsigned char* __restrict__ dst, const long long* __restrict__ fdesc,
                                        const int* __restrict__ bounds, const int* __restrict__ weights) {
    __shared__ int smem_words[FUSED_SMEM / 4];
    unsigned char* sm = (unsigned char*)smem_words;
    const long long* d = fdesc + (long long)blockIdx.z * FDESC_LEN;
    const int out_w = (int)d[F_OUT_W];
    const int first = (int)d[F_FIRST];
    const int last = first + (int)d[F_OUT_H];
    const int tx = (int)d[FD_TX];
    const int x0 = (int)blockIdx.x * tx;
    const int oy0 = imax(first, (int)d[FD_ORG] + (int)blockIdx.y * (int)d[FD_R]);
    // Every exit before the barriers below is taken by the whole block alike.
    if (x0 >= out_w || oy0 >= last) return;
    const int x1 = imin(x0 + tx, out_w);
    const int oy1 = imin(last, (int)d[FD_ORG] + ((int)blockIdx.y + 1) * (int)d[FD_R]);
    const long long tab = d[F_TAB];
    const long long i0 = d[F_I0];
    // The oriented source columns [lo, hi) the tile's outputs read (Pillow's windows are monotonic).
    const int lo = bounds[2 * (tab + x0 + i0)];
    const int hi = bounds[2 * (tab + x1 - 1 + i0)] + bounds[2 * (tab + x1 - 1 + i0) + 1];
    const int w = (int)d[FD_W], h = (int)d[FD_H];
    const bool flipx = d[FD_FLIPX] != 0, flipy = d[FD_FLIPY] != 0;
    // The same pixels in the decoded image.
    const int dx0 = flipx ? w - hi : lo, dx1 = flipx ? w - lo : hi;
    const int dy0 = flipy ? h - oy1 : oy0, dy1 = flipy ? h - oy0 : oy1;
    const int ncomp = (int)d[FD_NCOMP];
    Window win[3];
    int used = 0;
    for (int c = 0; c < ncomp; ++c) {
        const long long* cd = d + FD_COMP + c * FC_LEN;
        const int mode = (int)cd[FC_MODE];
        const int s = (int)cd[FC_SCALE];
        int px0, px1, py0, py1;
        axis_range(mode == 0 || mode == 3 ? 0 : (mode == 1 ? 1 : 2), (int)cd[FC_HX], dx0, dx1, (int)cd[FC_DW], &px0,
                   &px1);
        axis_range(mode == 0 || mode == 2 ? 0 : (mode == 1 ? 1 : 2), (int)cd[FC_VY], dy0, dy1, (int)cd[FC_DH], &py0,
                   &py1);
        Window& wn = win[c];
        wn.s = s;
        wn.bx0 = px0 / s;
        wn.by0 = py0 / s;
        wn.nbx = (px1 - 1) / s + 1 - wn.bx0;
        wn.nby = (py1 - 1) / s + 1 - wn.by0;
        wn.off = used;
        used += wn.nbx * wn.nby * s * s;
    }
    const int span = hi - lo;
    const int rows = oy1 - oy0;
    unsigned char* rgb = sm + used;
    if (used + rows * span * 3 > FUSED_SMEM) return;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nt = blockDim.x * blockDim.y;

    // 1. Dequantization and IDCT of the windows' blocks (jpeg_idct's arithmetic).
    int total = 0;
    for (int c = 0; c < ncomp; ++c) total += win[c].nbx * win[c].nby;
    for (int k = tid; k < total; k += nt) {
        int c = 0, e = k;
        while (e >= win[c].nbx * win[c].nby) e -= win[c].nbx * win[c].nby, ++c;
        const Window& wn = win[c];
        const long long* cd = d + FD_COMP + c * FC_LEN;
        const int bx = e % wn.nbx, by = e / wn.nbx;
        const short* in = coefs + cd[FC_COEF] + ((long long)(wn.by0 + by) * cd[FC_WB] + wn.bx0 + bx) * 64;
        const int* q = quant + cd[FC_QUANT];
        const int pitch = wn.nbx * wn.s;
        unsigned char* out = sm + wn.off + by * wn.s * pitch + bx * wn.s;
        if (wn.s == 8) {
            idct_islow(in, q, out, pitch);
        } else if (wn.s == 4) {
            idct_4x4(in, q, out, pitch);
        } else if (wn.s == 2) {
            idct_2x2(in, q, out, pitch);
        } else {
            out[0] = range_limit(DESCALE((jlong)(in[0] * q[0]), 3));
        }
    }
    __syncthreads();

    // 2. Upsampling and colour conversion of the strip's pixels, in oriented order.
    for (int e = tid; e < rows * span; e += nt) {
        const int r = e / span;
        const int ox = lo + (e - r * span);
        const int oy = oy0 + r;
        const int x = flipx ? w - 1 - ox : ox;
        const int y = flipy ? h - 1 - oy : oy;
        int v[3];
        for (int c = 0; c < ncomp; ++c) {
            const long long* cd = d + FD_COMP + c * FC_LEN;
            const Window& wn = win[c];
            v[c] = sample_at(sm + wn.off, wn.nbx * wn.s, wn.bx0 * wn.s, wn.by0 * wn.s, (int)cd[FC_DW], (int)cd[FC_DH],
                             (int)cd[FC_MODE], (int)cd[FC_HX], (int)cd[FC_VY], x, y);
        }
        unsigned char* o = rgb + e * 3;
        if (ncomp == 1) {
            o[0] = o[1] = o[2] = (unsigned char)v[0];
        } else {
            ycc_rgb(v[0], v[1] - 128, v[2] - 128, o);
        }
    }
    __syncthreads();

    // 3. The horizontal pass's outputs of this tile (resize.cu's arithmetic, its output layout).
    const int cols = x1 - x0;
    const int ksize = (int)d[F_KSIZE];
    for (int e = tid; e < rows * cols; e += nt) {
        const int r = e / cols;
        const int x = x0 + (e - r * cols);
        const long long i = x + i0;
        const int tap0 = bounds[2 * (tab + i)];
        const int count = bounds[2 * (tab + i) + 1];
        const long long out = d[F_DST] + (long long)(oy0 + r - first) * d[F_DY] + (long long)x * d[F_DX];
        resample_pixel(rgb + ((long long)r * span + tap0 - lo) * 3, 3, 1, count, weights + tab * ksize + i, d[F_ROWS],
                       dst, out, d[F_DC], nullptr);
    }
}
