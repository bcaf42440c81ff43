// JPEG decoding after the entropy decoder: dequantization and inverse DCT, chroma upsampling and
// YCbCr -> RGB, for a (ragged) batch, bit-exact with libjpeg-turbo 3 as Pillow, torchvision and
// fastprep's CPU decoder run it (ISLOW IDCT, fancy upsampling). The quantized coefficients come
// from the CPU (Rust, libjpeg-turbo's own entropy decoder); nothing here goes back to the host.
//
// This is our own code, written against libjpeg-turbo's sources for its exact integer
// arithmetic, because the point is parity: a float IDCT or a different upsampling filter (what
// nvJPEG and most GPU decoders do) changes pixels by a few levels, and a model then sees other
// inputs than the CPU pipeline gives it. Each function names the libjpeg-turbo function it matches.
//
// Kernel `jpeg_idct`: one thread per 8x8 coefficient block, grid z over component planes.
//   pdesc[p * PDESC_LEN + field] (int64) for plane p:
//     P_COEF   element offset of the plane's first block in `coefs` (int16, 64 per block,
//              natural order, blocks row-major)
//     P_QUANT  element offset of its 64 dequantization multipliers in `quant` (int32: libjpeg's
//              ISLOW_MULT_TYPE, i.e. the table value cast to a 16-bit short)
//     P_WB, P_HB  blocks per row, block rows
//     P_OUT    byte offset of the plane in `planes`; P_PITCH its row pitch in bytes
//     P_SCALE  libjpeg's DCT_scaled_size of the component: 8 (jpeg_idct_islow), 4, 2, 1
//              (jpeg_idct_4x4 / 2x2 / 1x1 of jidctred.c: Pillow's draft mode)
//
// Kernel `jpeg_color`: one thread per pixel of the decoded (scaled) image, grid z over images.
//   idesc[n * IDESC_LEN + field] (int64) for image n:
//     I_W, I_H   size of the decoded image; I_NCOMP 1 (gray) or 3 (YCbCr)
//     I_DST      byte offset of pixel (0, 0) in `dst` (RGB, 3 bytes per pixel); I_DX, I_DY the
//                byte steps of one pixel right and one row down: any of the 8 EXIF orientations
//                is an affine map of this kind, so the rotated image is written directly
//     then for each component c at I_COMP + c * C_LEN:
//       C_OFF, C_PITCH  the plane (as P_OUT, P_PITCH); C_DW, C_DH its downsampled size (libjpeg's
//       downsampled_width/height: sample columns/rows that are real, not block padding)
//       C_MODE  0: full size, 1: replicate (C_HX x C_VY, int_upsample / h2v1 / h2v2_upsample),
//               2: h2v1_fancy_upsample, 3: h1v2_fancy_upsample, 4: h2v2_fancy_upsample
//       C_HX, C_VY  the replication factors of mode 1
#define PDESC_LEN 8
#define P_COEF 0
#define P_QUANT 1
#define P_WB 2
#define P_HB 3
#define P_OUT 4
#define P_PITCH 5
#define P_SCALE 6

#define IDESC_LEN 32
#define I_W 0
#define I_H 1
#define I_NCOMP 2
#define I_DST 3
#define I_DX 4
#define I_DY 5
#define I_COMP 6
#define C_LEN 7
#define C_OFF 0
#define C_PITCH 1
#define C_DW 2
#define C_DH 3
#define C_MODE 4
#define C_HX 5
#define C_VY 6

// libjpeg's JLONG is `long`: 64 bits on the LP64 systems the CPU decoder runs on.
typedef long long jlong;

#define CONST_BITS 13
#define PASS1_BITS 2
// DESCALE of jdct.h: a rounding arithmetic right shift.
#define DESCALE(x, n) (((x) + ((jlong)1 << ((n)-1))) >> (n))

// The post-IDCT range limit: libjpeg indexes `IDCT_range_limit` (sample_range_limit + 128,
// prepare_range_limit_table of jdmaster.c) with `x & RANGE_MASK` (1023), which clamps values
// in [-512, 511] to [0, 255] around the 128 level shift and wraps the rest, as this does.
__device__ __forceinline__ unsigned char range_limit(jlong x) {
    const int v = (int)x & 1023;
    return (unsigned char)(v < 128 ? v + 128 : (v < 512 ? 255 : (v < 896 ? 0 : v - 896)));
}

// jpeg_idct_islow (jidctint.c). The zero-AC shortcuts of the C code give the same results as
// the general path (DESCALE of a multiple of the scale), so they are not repeated here.
__device__ void idct_islow(const short* in, const int* q, unsigned char* out, long long pitch) {
    int ws[64];
    for (int c = 0; c < 8; ++c) {
        jlong z1, z2, z3, z4, z5, tmp0, tmp1, tmp2, tmp3, tmp10, tmp11, tmp12, tmp13;
        z2 = (jlong)(in[16 + c] * q[16 + c]);
        z3 = (jlong)(in[48 + c] * q[48 + c]);
        z1 = (z2 + z3) * 4433;
        tmp2 = z1 + z3 * -15137;
        tmp3 = z1 + z2 * 6270;
        z2 = (jlong)(in[c] * q[c]);
        z3 = (jlong)(in[32 + c] * q[32 + c]);
        tmp0 = (jlong)((unsigned long long)(z2 + z3) << CONST_BITS);
        tmp1 = (jlong)((unsigned long long)(z2 - z3) << CONST_BITS);
        tmp10 = tmp0 + tmp3;
        tmp13 = tmp0 - tmp3;
        tmp11 = tmp1 + tmp2;
        tmp12 = tmp1 - tmp2;
        tmp0 = (jlong)(in[56 + c] * q[56 + c]);
        tmp1 = (jlong)(in[40 + c] * q[40 + c]);
        tmp2 = (jlong)(in[24 + c] * q[24 + c]);
        tmp3 = (jlong)(in[8 + c] * q[8 + c]);
        z1 = tmp0 + tmp3;
        z2 = tmp1 + tmp2;
        z3 = tmp0 + tmp2;
        z4 = tmp1 + tmp3;
        z5 = (z3 + z4) * 9633;
        tmp0 = tmp0 * 2446;
        tmp1 = tmp1 * 16819;
        tmp2 = tmp2 * 25172;
        tmp3 = tmp3 * 12299;
        z1 = z1 * -7373;
        z2 = z2 * -20995;
        z3 = z3 * -16069;
        z4 = z4 * -3196;
        z3 += z5;
        z4 += z5;
        tmp0 += z1 + z3;
        tmp1 += z2 + z4;
        tmp2 += z2 + z3;
        tmp3 += z1 + z4;
        ws[c] = (int)DESCALE(tmp10 + tmp3, CONST_BITS - PASS1_BITS);
        ws[56 + c] = (int)DESCALE(tmp10 - tmp3, CONST_BITS - PASS1_BITS);
        ws[8 + c] = (int)DESCALE(tmp11 + tmp2, CONST_BITS - PASS1_BITS);
        ws[48 + c] = (int)DESCALE(tmp11 - tmp2, CONST_BITS - PASS1_BITS);
        ws[16 + c] = (int)DESCALE(tmp12 + tmp1, CONST_BITS - PASS1_BITS);
        ws[40 + c] = (int)DESCALE(tmp12 - tmp1, CONST_BITS - PASS1_BITS);
        ws[24 + c] = (int)DESCALE(tmp13 + tmp0, CONST_BITS - PASS1_BITS);
        ws[32 + c] = (int)DESCALE(tmp13 - tmp0, CONST_BITS - PASS1_BITS);
    }
    for (int r = 0; r < 8; ++r) {
        const int* w = ws + 8 * r;
        unsigned char* o = out + r * pitch;
        jlong z1, z2, z3, z4, z5, tmp0, tmp1, tmp2, tmp3, tmp10, tmp11, tmp12, tmp13;
        z2 = (jlong)w[2];
        z3 = (jlong)w[6];
        z1 = (z2 + z3) * 4433;
        tmp2 = z1 + z3 * -15137;
        tmp3 = z1 + z2 * 6270;
        tmp0 = (jlong)((unsigned long long)((jlong)w[0] + (jlong)w[4]) << CONST_BITS);
        tmp1 = (jlong)((unsigned long long)((jlong)w[0] - (jlong)w[4]) << CONST_BITS);
        tmp10 = tmp0 + tmp3;
        tmp13 = tmp0 - tmp3;
        tmp11 = tmp1 + tmp2;
        tmp12 = tmp1 - tmp2;
        tmp0 = (jlong)w[7];
        tmp1 = (jlong)w[5];
        tmp2 = (jlong)w[3];
        tmp3 = (jlong)w[1];
        z1 = tmp0 + tmp3;
        z2 = tmp1 + tmp2;
        z3 = tmp0 + tmp2;
        z4 = tmp1 + tmp3;
        z5 = (z3 + z4) * 9633;
        tmp0 = tmp0 * 2446;
        tmp1 = tmp1 * 16819;
        tmp2 = tmp2 * 25172;
        tmp3 = tmp3 * 12299;
        z1 = z1 * -7373;
        z2 = z2 * -20995;
        z3 = z3 * -16069;
        z4 = z4 * -3196;
        z3 += z5;
        z4 += z5;
        tmp0 += z1 + z3;
        tmp1 += z2 + z4;
        tmp2 += z2 + z3;
        tmp3 += z1 + z4;
        const int sh = CONST_BITS + PASS1_BITS + 3;
        o[0] = range_limit(DESCALE(tmp10 + tmp3, sh));
        o[7] = range_limit(DESCALE(tmp10 - tmp3, sh));
        o[1] = range_limit(DESCALE(tmp11 + tmp2, sh));
        o[6] = range_limit(DESCALE(tmp11 - tmp2, sh));
        o[2] = range_limit(DESCALE(tmp12 + tmp1, sh));
        o[5] = range_limit(DESCALE(tmp12 - tmp1, sh));
        o[3] = range_limit(DESCALE(tmp13 + tmp0, sh));
        o[4] = range_limit(DESCALE(tmp13 - tmp0, sh));
    }
}

// jpeg_idct_4x4 (jidctred.c): 4x4 samples from the low 4x4 frequencies (row and column 4 unused).
__device__ void idct_4x4(const short* in, const int* q, unsigned char* out, long long pitch) {
    int ws[32];  // 4 rows of 8, as the C workspace (column 4 unused)
    for (int c = 0; c < 8; ++c) {
        if (c == 4) continue;
        jlong tmp0, tmp2, tmp10, tmp12, z1, z2, z3, z4;
        tmp0 = (jlong)(in[c] * q[c]);
        tmp0 = (jlong)((unsigned long long)tmp0 << (CONST_BITS + 1));
        z2 = (jlong)(in[16 + c] * q[16 + c]);
        z3 = (jlong)(in[48 + c] * q[48 + c]);
        tmp2 = z2 * 15137 + z3 * -6270;
        tmp10 = tmp0 + tmp2;
        tmp12 = tmp0 - tmp2;
        z1 = (jlong)(in[56 + c] * q[56 + c]);
        z2 = (jlong)(in[40 + c] * q[40 + c]);
        z3 = (jlong)(in[24 + c] * q[24 + c]);
        z4 = (jlong)(in[8 + c] * q[8 + c]);
        tmp0 = z1 * -1730 + z2 * 11893 + z3 * -17799 + z4 * 8697;
        tmp2 = z1 * -4176 + z2 * -4926 + z3 * 7373 + z4 * 20995;
        ws[c] = (int)DESCALE(tmp10 + tmp2, CONST_BITS - PASS1_BITS + 1);
        ws[24 + c] = (int)DESCALE(tmp10 - tmp2, CONST_BITS - PASS1_BITS + 1);
        ws[8 + c] = (int)DESCALE(tmp12 + tmp0, CONST_BITS - PASS1_BITS + 1);
        ws[16 + c] = (int)DESCALE(tmp12 - tmp0, CONST_BITS - PASS1_BITS + 1);
    }
    for (int r = 0; r < 4; ++r) {
        const int* w = ws + 8 * r;
        unsigned char* o = out + r * pitch;
        jlong tmp0, tmp2, tmp10, tmp12, z1, z2, z3, z4;
        tmp0 = (jlong)((unsigned long long)(jlong)w[0] << (CONST_BITS + 1));
        tmp2 = (jlong)w[2] * 15137 + (jlong)w[6] * -6270;
        tmp10 = tmp0 + tmp2;
        tmp12 = tmp0 - tmp2;
        z1 = (jlong)w[7];
        z2 = (jlong)w[5];
        z3 = (jlong)w[3];
        z4 = (jlong)w[1];
        tmp0 = z1 * -1730 + z2 * 11893 + z3 * -17799 + z4 * 8697;
        tmp2 = z1 * -4176 + z2 * -4926 + z3 * 7373 + z4 * 20995;
        const int sh = CONST_BITS + PASS1_BITS + 3 + 1;
        o[0] = range_limit(DESCALE(tmp10 + tmp2, sh));
        o[3] = range_limit(DESCALE(tmp10 - tmp2, sh));
        o[1] = range_limit(DESCALE(tmp12 + tmp0, sh));
        o[2] = range_limit(DESCALE(tmp12 - tmp0, sh));
    }
}

// jpeg_idct_2x2 (jidctred.c): 2x2 samples from the DC and the odd frequencies.
__device__ void idct_2x2(const short* in, const int* q, unsigned char* out, long long pitch) {
    int ws[16];
    for (int c = 0; c < 8; ++c) {
        if (c == 2 || c == 4 || c == 6) continue;
        jlong tmp0, tmp10;
        tmp10 = (jlong)((unsigned long long)(jlong)(in[c] * q[c]) << (CONST_BITS + 2));
        tmp0 = (jlong)(in[56 + c] * q[56 + c]) * -5906;
        tmp0 += (jlong)(in[40 + c] * q[40 + c]) * 6967;
        tmp0 += (jlong)(in[24 + c] * q[24 + c]) * -10426;
        tmp0 += (jlong)(in[8 + c] * q[8 + c]) * 29692;
        ws[c] = (int)DESCALE(tmp10 + tmp0, CONST_BITS - PASS1_BITS + 2);
        ws[8 + c] = (int)DESCALE(tmp10 - tmp0, CONST_BITS - PASS1_BITS + 2);
    }
    for (int r = 0; r < 2; ++r) {
        const int* w = ws + 8 * r;
        unsigned char* o = out + r * pitch;
        const jlong tmp10 = (jlong)((unsigned long long)(jlong)w[0] << (CONST_BITS + 2));
        const jlong tmp0 = (jlong)w[7] * -5906 + (jlong)w[5] * 6967 + (jlong)w[3] * -10426 + (jlong)w[1] * 29692;
        const int sh = CONST_BITS + PASS1_BITS + 3 + 2;
        o[0] = range_limit(DESCALE(tmp10 + tmp0, sh));
        o[1] = range_limit(DESCALE(tmp10 - tmp0, sh));
    }
}

extern "C" __global__ void jpeg_idct(const short* __restrict__ coefs, const int* __restrict__ quant,
                                     unsigned char* __restrict__ planes, const long long* __restrict__ pdesc) {
    const long long* d = pdesc + (long long)blockIdx.z * PDESC_LEN;
    const int bx = blockIdx.x * blockDim.x + threadIdx.x;
    const int by = blockIdx.y * blockDim.y + threadIdx.y;
    if (bx >= (int)d[P_WB] || by >= (int)d[P_HB]) return;
    const short* in = coefs + d[P_COEF] + ((long long)by * d[P_WB] + bx) * 64;
    const int* q = quant + d[P_QUANT];
    const int s = (int)d[P_SCALE];
    const long long pitch = d[P_PITCH];
    unsigned char* out = planes + d[P_OUT] + (long long)by * s * pitch + (long long)bx * s;
    if (s == 8) {
        idct_islow(in, q, out, pitch);
    } else if (s == 4) {
        idct_4x4(in, q, out, pitch);
    } else if (s == 2) {
        idct_2x2(in, q, out, pitch);
    } else {
        // jpeg_idct_1x1: the block mean, DESCALE(dc, 3).
        out[0] = range_limit(DESCALE((jlong)(in[0] * q[0]), 3));
    }
}

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The upsampled sample at output pixel (x, y) of a component plane whose sample (ox, oy) is at
// `p` (row pitch `pitch`): the upsampler jinit_upsampler (jdsample.c) picks for the component
// (`mode`, `hx`, `vy` as C_MODE, C_HX, C_VY), with the edges libjpeg gives it: column neighbours
// past the real width `dw` repeat the edge (the special first/last columns of the fancy
// upsamplers), and rows above the first / below the last real row (`dh`) repeat it (jdmainct.c's
// context pointers, set_bottom_pointers). (ox, oy) is (0, 0) for a whole plane, a window's corner
// for the window of it that jpeg_fused.cu keeps in shared memory.
__device__ __forceinline__ int sample_at(const unsigned char* p, long long pitch, int ox, int oy, int dw, int dh,
                                         int mode, int hx, int vy, int x, int y) {
    switch (mode) {
    case 0:
        return p[(y - oy) * pitch + (x - ox)];
    case 1:
        return p[(y / vy - oy) * pitch + (x / hx - ox)];
    case 2: {  // h2v1_fancy_upsample: 3/4 nearer + 1/4 further sample, biased 1 and 2
        const int i = x >> 1;
        const int j = (x & 1) ? clampi(i + 1, 0, dw - 1) : clampi(i - 1, 0, dw - 1);
        const long long row = (y - oy) * pitch - ox;
        return (3 * p[row + i] + p[row + j] + ((x & 1) ? 2 : 1)) >> 2;
    }
    case 3: {  // h1v2_fancy_upsample: the same vertically
        const int i = y >> 1;
        const int r = (y & 1) ? clampi(i + 1, 0, dh - 1) : clampi(i - 1, 0, dh - 1);
        return (3 * p[(i - oy) * pitch + (x - ox)] + p[(r - oy) * pitch + (x - ox)] + ((y & 1) ? 2 : 1)) >> 2;
    }
    default: {  // h2v2_fancy_upsample: triangle filter, 9/16 3/16 3/16 1/16, biased 8 and 7
        const int i = y >> 1;
        const int r = (y & 1) ? clampi(i + 1, 0, dh - 1) : clampi(i - 1, 0, dh - 1);
        const int j = x >> 1;
        const int jn = (x & 1) ? clampi(j + 1, 0, dw - 1) : clampi(j - 1, 0, dw - 1);
        const long long near = (i - oy) * pitch - ox;
        const long long far = (r - oy) * pitch - ox;
        const int cs = 3 * p[near + j] + p[far + j];
        const int csn = 3 * p[near + jn] + p[far + jn];
        return (3 * cs + csn + ((x & 1) ? 7 : 8)) >> 4;
    }
    }
}

// The upsampled sample of component `c` (an idesc component) at output pixel (x, y).
__device__ __forceinline__ int sample(const unsigned char* planes, const long long* c, int x, int y) {
    return sample_at(planes + c[C_OFF], c[C_PITCH], 0, 0, (int)c[C_DW], (int)c[C_DH], (int)c[C_MODE], (int)c[C_HX],
                     (int)c[C_VY], x, y);
}

// ycc_rgb_convert (jdcolor.c) of one pixel, `cb` and `cr` less 128, into o[0..2].
__device__ __forceinline__ void ycc_rgb(int yy, int cb, int cr, unsigned char* o) {
    const int r = yy + ((91881 * cr + 32768) >> 16);
    const int g = yy + ((-22554 * cb + 32768 + -46802 * cr) >> 16);
    const int b = yy + ((116130 * cb + 32768) >> 16);
    o[0] = (unsigned char)clampi(r, 0, 255);
    o[1] = (unsigned char)clampi(g, 0, 255);
    o[2] = (unsigned char)clampi(b, 0, 255);
}

// ycc_rgb_convert (jdcolor.c) with build_ycc_rgb_table's fixed point (SCALEBITS 16, ONE_HALF
// rounding): R = Y + Cr_r_tab[Cr], G = Y + ((Cb_g_tab[Cb] + Cr_g_tab[Cr]) >> 16),
// B = Y + Cb_b_tab[Cb], each through the 0..255 range limit.
extern "C" __global__ void jpeg_color(const unsigned char* __restrict__ planes, unsigned char* __restrict__ dst,
                                      const long long* __restrict__ idesc) {
    const long long* d = idesc + (long long)blockIdx.z * IDESC_LEN;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= (int)d[I_W] || y >= (int)d[I_H]) return;
    unsigned char* o = dst + d[I_DST] + (long long)x * d[I_DX] + (long long)y * d[I_DY];
    const int yy = sample(planes, d + I_COMP, x, y);
    if (d[I_NCOMP] == 1) {
        o[0] = o[1] = o[2] = (unsigned char)yy;
        return;
    }
    const int cb = sample(planes, d + I_COMP + C_LEN, x, y) - 128;
    const int cr = sample(planes, d + I_COMP + 2 * C_LEN, x, y) - 128;
    ycc_rgb(yy, cb, cr, o);
}
