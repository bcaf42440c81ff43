// Pillow-exact separable resize of a (possibly ragged) batch, one thread per output pixel.
//
// The weights are not computed here: the host passes the CPU path's own tables (Pillow's
// precompute_coeffs, from the Rust core), so both paths multiply the same numbers in the same
// order. 8-bit images use Pillow's fixed point (22-bit i32 weights, i32 sums from a half-unit
// bias, >> 22, clamp); float images use its mode "F" arithmetic (f64 weights and sums, stored as
// f32 between the passes). Like Pillow, the horizontal pass runs first, over only the source rows
// the vertical pass reads, and images more than 100x taller than wide run vertically first (the
// host orders the two launches).
//
// Per image n, `desc[n * DESC_LEN + field]` (int64):
//   SRC     element offset of the image in `src`        S_Y, S_X, S_C  its element strides
//   DST     element offset of the result in `dst`       D_Y, D_X, D_C  its element strides
//   OUT_W, OUT_H  size of this pass's output            FIRST  first source row (h pass) / 0
//   TAB     offset of the image's (first, count) pairs in `bounds`; its weights start at
//           TAB * KSIZE in `weights`, tap-major: weight t of table index i at t * ROWS + i, so
//           that neighbouring outputs read neighbouring words   KSIZE  weights per index (all
//           images alike)   ROWS  the image's table length
//   I0      table index of output 0 along the pass's axis (a crop window's offset)
// Nearest is the same pass with one tap of weight 1 (Pillow's index table as `bounds`).
//
// Preamble defines (the launcher compiles one module per combination):
//   CHANNELS   1, 3 or 4
//   SRC_DTYPE, DST_DTYPE  0: uint8 (both), 1: float32, 2: float16 (IEEE bits in unsigned short);
//              a float16 image keeps a float32 intermediate between the passes, like resizing
//              its float32 conversion and rounding the result once. A uint8 source with a float
//              destination (SRC_DTYPE 0, DST_DTYPE 1 or 2) is the last pass of preprocess: each
//              8-bit result goes through a table of `lut[c * 256 + v]` values (the CPU path's own
//              (v / 255 - mean) / std, as normalize.cu), written with the destination's strides
//              (NCHW or NHWC): kernel `resize_vertical_lut`, the vertical pass with that table
//   PREMUL_IN  1: premultiply RGBA by alpha on load (Pillow's RGBA -> RGBa), first pass
//   UNPREMUL_OUT 1: undo it on store (RGBa -> RGBA), last pass
//   H_SHARED   1: the horizontal pass stages each block's source span in shared memory (0, the
//              default: each thread reads its taps from global memory)
#ifndef CHANNELS
#define CHANNELS 3
#endif
#ifndef SRC_DTYPE
#define SRC_DTYPE 0
#endif
#ifndef DST_DTYPE
#define DST_DTYPE SRC_DTYPE
#endif
#ifndef PREMUL_IN
#define PREMUL_IN 0
#endif
#ifndef UNPREMUL_OUT
#define UNPREMUL_OUT 0
#endif

#ifndef H_SHARED
#define H_SHARED 0
#endif

#define DESC_LEN 15
#define F_SRC 0
#define F_SY 1
#define F_SX 2
#define F_SC 3
#define F_DST 4
#define F_DY 5
#define F_DX 6
#define F_DC 7
#define F_OUT_W 8
#define F_OUT_H 9
#define F_FIRST 10
#define F_TAB 11
#define F_KSIZE 12
#define F_I0 13
#define F_ROWS 14

#define TYPE_OF(code) TYPE_OF_##code
#define TYPE_OF_0 unsigned char
#define TYPE_OF_1 float
#define TYPE_OF_2 unsigned short
#define SRC_T_(c) TYPE_OF(c)
typedef SRC_T_(SRC_DTYPE) src_t;
typedef SRC_T_(DST_DTYPE) dst_t;
#if SRC_DTYPE == 0
typedef int weight_t;
#else
typedef double weight_t;
#endif

#define PRECISION_BITS (32 - 8 - 2)

// float16 <-> float32 without cuda_fp16.h, so that NVRTC needs no headers (CI compiles these
// sources with the NVRTC wheel alone) and the CPU emulation runs the same code.
__device__ __forceinline__ float half_to_float(unsigned short h) {
    const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
    unsigned int exp = (h >> 10) & 0x1fu;
    unsigned int man = h & 0x3ffu;
    unsigned int bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {  // subnormal: normalize
            exp = 127 - 15 + 1;
            while ((man & 0x400u) == 0) {
                man <<= 1;
                exp -= 1;
            }
            bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    union { unsigned int u; float f; } v;
    v.u = bits;
    return v.f;
}

// Round to nearest even, as numpy's astype(float16) and torch's .half() do.
__device__ __forceinline__ unsigned short float_to_half(float f) {
    union { float f; unsigned int u; } v;
    v.f = f;
    const unsigned int x = v.u;
    const unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
    const unsigned int exp = (x >> 23) & 0xffu;
    unsigned int man = x & 0x7fffffu;
    if (exp == 0xff) {  // inf or nan
        return sign | 0x7c00u | (man ? 0x200u : 0u);
    }
    int e = (int)exp - 127 + 15;
    if (e >= 31) return sign | 0x7c00u;  // overflow to inf
    if (e <= 0) {                        // subnormal half or zero
        if (e < -10) return sign;
        man |= 0x800000u;
        const int shift = 14 - e;
        unsigned int h = man >> shift;
        const unsigned int rem = man & ((1u << shift) - 1u);
        const unsigned int half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h += 1;
        return sign | (unsigned short)h;
    }
    unsigned int h = ((unsigned int)e << 10) | (man >> 13);
    const unsigned int rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h += 1;  // may carry into inf: correct
    return sign | (unsigned short)h;
}

// A float image's element as double: float32, or float16 bits.
__device__ __forceinline__ double load(const float* p) { return (double)*p; }
__device__ __forceinline__ double load(const unsigned short* p) { return (double)half_to_float(*p); }

// Pillow's MULDIV255: a * b / 255, rounded, in integers.
__device__ __forceinline__ int muldiv255(int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

// One output pixel: `count` taps from `p` (channel 0 of the first tap), `step` elements between
// taps and `cs` between channels; tap t weighs k[t * ks]. Taps outer, channels inner (each
// weight loaded once); every channel still sums its taps in order, as Pillow does. S and D are
// the element types read and written (a pass's source and destination: the image's, or the
// intermediate's between the passes); PRE premultiplies RGBA on load, UNPRE undoes it on store.
template <typename S, typename D, bool PRE, bool UNPRE>
__device__ __forceinline__ void resample_px(
    const S* p, long long step, long long cs, int count, const weight_t* __restrict__ k, long long ks,
    D* dst, long long out, long long dc, const D* __restrict__ lut) {
#if SRC_DTYPE == 0
    // Pillow sums in int32; unsigned arithmetic gives the same bits without C's signed-overflow
    // undefined behaviour.
    unsigned int ss[CHANNELS];
    for (int c = 0; c < CHANNELS; ++c) ss[c] = 1u << (PRECISION_BITS - 1);
    for (int t = 0; t < count; ++t) {
        const unsigned int w = (unsigned int)k[t * ks];
        const S* q = p + t * step;
        if constexpr (PRE && CHANNELS == 4) {
            const int a = q[3 * cs];
            for (int c = 0; c < 3; ++c) ss[c] += (unsigned int)muldiv255(q[c * cs], a) * w;
            ss[3] += (unsigned int)a * w;
        } else {
            for (int c = 0; c < CHANNELS; ++c) ss[c] += (unsigned int)q[c * cs] * w;
        }
    }
    int res[CHANNELS];
    for (int c = 0; c < CHANNELS; ++c) {
        const int v = (int)ss[c] >> PRECISION_BITS;
        res[c] = v < 0 ? 0 : (v > 255 ? 255 : v);
    }
    if constexpr (UNPRE && CHANNELS == 4) {
        // Pillow's RGBa -> RGBA: colour * 255 / alpha, truncated, clipped; alpha 0 and 255
        // unchanged. Written as one unsigned range test on purpose: `alpha != 0 && alpha != 255`
        // after the clamp above is compiled by CUDA 13.0's NVRTC for sm_90 into a VIMNMX.RELU with
        // a predicate output (SASS), and on an H200 that skipped the division for every alpha (the
        // colours came back premultiplied); NVRTC 13.5 compiles the same text with plain compares,
        // and this form with plain compares under both.
        const unsigned int alpha = (unsigned int)res[3];
        if (alpha - 1u < 254u) {
            for (int c = 0; c < 3; ++c) {
                const unsigned int v = (255u * (unsigned int)res[c]) / alpha;
                res[c] = (int)(v > 255u ? 255u : v);
            }
        }
    }
    if constexpr (sizeof(D) != 1) {
        // an 8-bit result stored through the normalize table (see the header)
        for (int c = 0; c < CHANNELS; ++c) dst[out + c * dc] = lut[c * 256 + res[c]];
    } else {
        (void)lut;
        for (int c = 0; c < CHANNELS; ++c) dst[out + c * dc] = (D)res[c];
    }
#else
    (void)lut;
    double ss[CHANNELS];
    for (int c = 0; c < CHANNELS; ++c) ss[c] = 0.0;
    for (int t = 0; t < count; ++t) {
        const double w = k[t * ks];
        const S* q = p + t * step;
        for (int c = 0; c < CHANNELS; ++c) ss[c] += load(q + c * cs) * w;
    }
    for (int c = 0; c < CHANNELS; ++c) {
        if constexpr (sizeof(D) == 2) {
            dst[out + c * dc] = float_to_half((float)ss[c]);
        } else {
            dst[out + c * dc] = (float)ss[c];
        }
    }
#endif
}

// resample_px of a module's one pass: its source and destination types and flags.
__device__ __forceinline__ void resample_pixel(
    const src_t* p, long long step, long long cs, int count, const weight_t* __restrict__ k, long long ks,
    dst_t* dst, long long out, long long dc, const dst_t* __restrict__ lut) {
    resample_px<src_t, dst_t, PREMUL_IN != 0, UNPREMUL_OUT != 0>(p, step, cs, count, k, ks, dst, out, dc, lut);
}

// One pass along one axis, each thread reading its taps from global memory. AXIS 0: horizontal
// (output x reads source x), 1: vertical.
template <int AXIS>
__device__ __forceinline__ void resample_pass(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights, const dst_t* __restrict__ lut) {
    const int n = blockIdx.z;
    const long long* d = desc + (long long)n * DESC_LEN;
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= (int)d[F_OUT_W] || y >= (int)d[F_OUT_H]) return;
    const long long tab = d[F_TAB];
    const int ksize = (int)d[F_KSIZE];
    const long long i = (AXIS == 0 ? x : y) + d[F_I0];  // the table index of this output
    const int first = bounds[2 * (tab + i)];
    const int count = bounds[2 * (tab + i) + 1];
    const long long step = AXIS == 0 ? d[F_SX] : d[F_SY];
    const long long base =
        d[F_SRC] + (AXIS == 0 ? (long long)(y + d[F_FIRST]) * d[F_SY] + (long long)first * d[F_SX]
                              : (long long)first * d[F_SY] + (long long)x * d[F_SX]);
    const long long out = d[F_DST] + (long long)y * d[F_DY] + (long long)x * d[F_DX];
    resample_pixel(src + base, step, d[F_SC], count, weights + tab * ksize + i, d[F_ROWS], dst, out, d[F_DC], lut);
}

// Shared memory for one block's source rows in the horizontal pass. 32 KiB: a 32-wide block of
// 8 rows shrinking 1920 -> 224 RGB needs 7 KiB in uint8 (28 KiB in float32).
#ifndef SMEM_BYTES
#define SMEM_BYTES 32768
#endif

// The horizontal pass with the block's source span staged in shared memory. Neighbouring outputs'
// windows overlap and sit several bytes apart, so reading them straight from global memory makes
// each warp-wide load touch many cache lines for a few bytes each; here the block copies the span
// of its 8 rows once, in order (coalesced), and the taps are read from shared memory. Returns
// false, for the whole block alike, when the span does not fit; the caller then reads global
// memory. Pillow's windows start and end monotonically with the output index (their centres do),
// so the span runs from the first output's window start to the last one's end.
__device__ __forceinline__ bool horizontal_shared(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
    __shared__ double smem[SMEM_BYTES / sizeof(double)];
    src_t* sh = (src_t*)smem;
    const long long* d = desc + (long long)blockIdx.z * DESC_LEN;
    const int out_w = (int)d[F_OUT_W];
    const int out_h = (int)d[F_OUT_H];
    const int x0 = blockIdx.x * blockDim.x;
    const int y0 = blockIdx.y * blockDim.y;
    if (x0 >= out_w || y0 >= out_h) return true;  // the whole block is past this image
    const int xl = (x0 + (int)blockDim.x < out_w ? x0 + (int)blockDim.x : out_w) - 1;
    const int rows = y0 + (int)blockDim.y < out_h ? (int)blockDim.y : out_h - y0;
    const long long tab = d[F_TAB];
    const long long i0 = tab + x0 + d[F_I0];
    const long long il = tab + xl + d[F_I0];
    const int lo = bounds[2 * i0];
    const int span = bounds[2 * il] + bounds[2 * il + 1] - lo;
    const int per_row = span * CHANNELS;
    if (span <= 0) return false;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nt = blockDim.x * blockDim.y;
    const long long sx = d[F_SX];
    const long long sc = d[F_SC];
    // Interleaved rows (NHWC) are one run of bytes per row: copied as aligned 32-bit words (the
    // word holding a run's first and last byte lies inside the buffer's allocation, so nothing
    // outside is read). Each staged row is `pitch` words; the run starts `head` bytes into it.
    const bool run = sc == 1 && sx == CHANNELS;
    const int run_bytes = per_row * (int)sizeof(src_t);
    const int pitch = (run_bytes + 3) / 4 + 1;
    if (run ? (long long)pitch * 4 * rows > SMEM_BYTES : (long long)run_bytes * rows > SMEM_BYTES) return false;
    const src_t* row0 = src + d[F_SRC] + (long long)(y0 + d[F_FIRST]) * d[F_SY] + (long long)lo * sx;
    for (int r = 0; r < rows; ++r) {
        const src_t* row = row0 + (long long)r * d[F_SY];
        if (run) {
            const unsigned long long addr = (unsigned long long)row;
            const int head = (int)(addr & 3u);
            const unsigned int* words = (const unsigned int*)(addr - (unsigned long long)head);
            const int n_words = (head + run_bytes + 3) / 4;
            unsigned int* to = (unsigned int*)smem + r * pitch;
            for (int e = tid; e < n_words; e += nt) to[e] = words[e];
        } else {
            for (int e = tid; e < per_row; e += nt) {
                const int px = e / CHANNELS;
                sh[r * per_row + e] = row[px * sx + (e - px * CHANNELS) * sc];
            }
        }
    }
    __syncthreads();
    const int x = x0 + threadIdx.x;
    const int y = y0 + threadIdx.y;
    if (x >= out_w || y >= out_h) return true;
    const long long i = x + d[F_I0];
    const int first = bounds[2 * (tab + i)];
    const int count = bounds[2 * (tab + i) + 1];
    const long long out = d[F_DST] + (long long)y * d[F_DY] + (long long)x * d[F_DX];
    const unsigned long long mine = (unsigned long long)(row0 + (long long)threadIdx.y * d[F_SY]);
    const src_t* p = run ? (const src_t*)((const unsigned char*)smem + threadIdx.y * pitch * 4 + (int)(mine & 3u))
                         : sh + threadIdx.y * per_row;
    resample_pixel(p + (first - lo) * CHANNELS, CHANNELS, 1, count, weights + tab * d[F_KSIZE] + i, d[F_ROWS],
                   dst, out, d[F_DC], nullptr);
    return true;
}

extern "C" __global__ void resize_horizontal(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
    if (!H_SHARED || !horizontal_shared(src, dst, desc, bounds, weights)) {
        resample_pass<0>(src, dst, desc, bounds, weights, nullptr);
    }
}

extern "C" __global__ void resize_vertical(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
    resample_pass<1>(src, dst, desc, bounds, weights, nullptr);
}

extern "C" __global__ void resize_vertical_lut(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights, const dst_t* __restrict__ lut) {
    resample_pass<1>(src, dst, desc, bounds, weights, lut);
}

// Both passes in one launch, for images Pillow resizes horizontally first: a block takes a tile
// of TX output columns and TY output rows, runs the horizontal pass over the source rows the
// tile's vertical taps read into shared memory (the intermediate, uint8 for 8-bit images as in
// Pillow, float32 otherwise), then the vertical pass from there into the output. So the
// intermediate image never goes to device memory, and a batch is one launch; tall tiles keep the
// source rows that neighbouring tiles both read (their tap windows overlap) few. The results are
// the two launches' byte for byte: the same resample_px, the same tables, the same order.
//
// rdesc[n * RDESC_LEN + field] (int64) for image n:
//   R_SRC, R_SY, R_SX, R_SC   the source (as F_SRC .. F_SC)
//   R_DST, R_DY, R_DX, R_DC   the output (as F_DST .. F_DC)
//   R_OUT_W, R_OUT_H          the output's size (a crop window's)
//   R_HTAB, R_HK, R_HI0, R_HROWS  the horizontal table (as F_TAB, F_KSIZE, F_I0, F_ROWS)
//   R_VTAB, R_VK, R_VI0, R_VROWS  the vertical table
//   R_TX, R_TY                the tile; the launcher keeps every tile's intermediate within
//                             RESIZE_SMEM (a tile that would not fit returns without writing)
#define RDESC_LEN 20
#define R_SRC 0
#define R_SY 1
#define R_SX 2
#define R_SC 3
#define R_DST 4
#define R_DY 5
#define R_DX 6
#define R_DC 7
#define R_OUT_W 8
#define R_OUT_H 9
#define R_HTAB 10
#define R_HK 11
#define R_HI0 12
#define R_HROWS 13
#define R_VTAB 14
#define R_VK 15
#define R_VI0 16
#define R_VROWS 17
#define R_TX 18
#define R_TY 19

#ifndef RESIZE_SMEM
#define RESIZE_SMEM 40960
#endif

#if SRC_DTYPE == 0
typedef unsigned char inter_t;
#else
typedef float inter_t;
#endif

// HV_STAGE 1 (the default): resize_hv's horizontal phase copies the tile's source span, a few
// rows at a time, into shared memory with 16-byte loads (each row's bytes from the 16-byte word
// holding its first byte to the one holding its last, coalesced across the block), then reads
// the taps from there. Without it (0, or where the span is not one run of bytes: planar
// sources, or too wide for HV_STAGE_BYTES) each thread reads its taps from global memory, one
// element a load: a 1080p -> 224 tile's 164 source rows x 32 outputs x 18 taps x 3 channels are
// 283k one-byte loads, against 9k 16-byte ones staged. RESIZE_SMEM + HV_STAGE_BYTES stays within
// the 48 KiB of static shared memory a block may take.
#ifndef HV_STAGE
#define HV_STAGE 1
#endif
#ifndef HV_STAGE_BYTES
#define HV_STAGE_BYTES 8192
#endif

// 16 bytes, loaded and stored as one (CUDA's uint4 without its header, so that NVRTC needs none).
struct __align__(16) stage16 {
    unsigned int w[4];
};

// resize_hv's horizontal phase through the staging buffer (see HV_STAGE): the intermediate rows
// [0, rows) of the tile's `cols` columns from source rows r0.., or false (for the whole block
// alike, before any barrier) where the span is not one run of bytes or a row does not fit.
__device__ __forceinline__ bool hv_staged(
    const src_t* __restrict__ src, const long long* __restrict__ d, const int* __restrict__ hbounds,
    const weight_t* __restrict__ hweights, inter_t* inter, stage16* stage, int x0, int cols, int r0, int rows,
    int tid, int nt) {
    const long long sx = d[R_SX];
    if (!(d[R_SC] == 1 && sx == CHANNELS)) return false;
    const long long htab = d[R_HTAB], hi0 = d[R_HI0];
    const int lo = hbounds[2 * (htab + x0 + hi0)];
    const long long il = htab + x0 + cols - 1 + hi0;
    const int span = hbounds[2 * il] + hbounds[2 * il + 1] - lo;
    if (span <= 0) return false;
    const int run_bytes = span * CHANNELS * (int)sizeof(src_t);
    // Each staged row takes `pitch` 16-byte words: the run plus up to 15 bytes before it.
    const int pitch = (run_bytes + 15) / 16 + 1;
    const int chunk = HV_STAGE_BYTES / (pitch * 16);
    if (chunk == 0) return false;
    const unsigned char* base = (const unsigned char*)(src + d[R_SRC] + (long long)lo * sx);
    const long long row_bytes = d[R_SY] * (long long)sizeof(src_t);
    for (int c0 = 0; c0 < rows; c0 += chunk) {
        const int nr = rows - c0 < chunk ? rows - c0 : chunk;
        // The word holding a row's first byte and the one holding its last lie inside the
        // buffer's allocation (device allocations are 256-byte aligned), so nothing outside it
        // is read.
        for (int e = tid; e < nr * pitch; e += nt) {
            const int r = e / pitch;
            const int k = e - r * pitch;
            const unsigned long long addr = (unsigned long long)(base + (long long)(r0 + c0 + r) * row_bytes);
            const int head = (int)(addr & 15u);
            if (k < (head + run_bytes + 15) / 16) {
                stage[e] = ((const stage16*)(addr - (unsigned long long)head))[k];
            }
        }
        __syncthreads();
        for (int e = tid; e < nr * cols; e += nt) {
            const int r = e / cols;
            const int col = e - r * cols;
            const long long i = x0 + col + hi0;
            const int first = hbounds[2 * (htab + i)];
            const int count = hbounds[2 * (htab + i) + 1];
            const unsigned long long addr = (unsigned long long)(base + (long long)(r0 + c0 + r) * row_bytes);
            const src_t* p = (const src_t*)((const unsigned char*)(stage + r * pitch) + (int)(addr & 15u)) +
                             (first - lo) * CHANNELS;
            resample_px<src_t, inter_t, PREMUL_IN != 0, false>(p, CHANNELS, 1, count, hweights + htab * d[R_HK] + i,
                                                               d[R_HROWS], inter,
                                                               ((long long)(c0 + r) * cols + col) * CHANNELS, 1,
                                                               nullptr);
        }
        __syncthreads();
    }
    return true;
}


extern "C" __global__ void resize_hv(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ rdesc,
    const int* __restrict__ hbounds, const weight_t* __restrict__ hweights, const int* __restrict__ vbounds,
    const weight_t* __restrict__ vweights, const dst_t* __restrict__ lut) {
    __shared__ double smem_hv[RESIZE_SMEM / sizeof(double)];
    inter_t* inter = (inter_t*)smem_hv;
    const long long* d = rdesc + (long long)blockIdx.z * RDESC_LEN;
    const int out_w = (int)d[R_OUT_W], out_h = (int)d[R_OUT_H];
    const int x0 = (int)blockIdx.x * (int)d[R_TX], y0 = (int)blockIdx.y * (int)d[R_TY];
    // Every exit before the barrier is taken by the whole block alike.
    if (x0 >= out_w || y0 >= out_h) return;
    const int x1 = x0 + (int)d[R_TX] < out_w ? x0 + (int)d[R_TX] : out_w;
    const int y1 = y0 + (int)d[R_TY] < out_h ? y0 + (int)d[R_TY] : out_h;
    const long long vtab = d[R_VTAB], vi0 = d[R_VI0];
    // The source rows [r0, r1) the tile's vertical taps read (Pillow's windows are monotonic).
    const int r0 = vbounds[2 * (vtab + y0 + vi0)];
    const int r1 = vbounds[2 * (vtab + y1 - 1 + vi0)] + vbounds[2 * (vtab + y1 - 1 + vi0) + 1];
    const int cols = x1 - x0, rows = r1 - r0;
    if ((long long)rows * cols * CHANNELS * (long long)sizeof(inter_t) > RESIZE_SMEM) return;
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nt = blockDim.x * blockDim.y;
#if HV_STAGE
    __shared__ stage16 stage[HV_STAGE_BYTES / 16];
    const bool staged = hv_staged(src, d, hbounds, hweights, inter, stage, x0, cols, r0, rows, tid, nt);
#else
    const bool staged = false;
#endif
    const long long htab = d[R_HTAB], hi0 = d[R_HI0];
    for (int e = staged ? rows * cols : tid; e < rows * cols; e += nt) {
        const int r = e / cols;
        const long long i = x0 + (e - r * cols) + hi0;
        const int first = hbounds[2 * (htab + i)];
        const int count = hbounds[2 * (htab + i) + 1];
        const src_t* p = src + d[R_SRC] + (long long)(r0 + r) * d[R_SY] + (long long)first * d[R_SX];
        resample_px<src_t, inter_t, PREMUL_IN != 0, false>(p, d[R_SX], d[R_SC], count, hweights + htab * d[R_HK] + i,
                                                           d[R_HROWS], inter, (long long)e * CHANNELS, 1, nullptr);
    }
    __syncthreads();
    const int out_rows = y1 - y0;
    for (int e = tid; e < out_rows * cols; e += nt) {
        const int yy = e / cols;
        const int x = x0 + (e - yy * cols);
        const int y = y0 + yy;
        const long long i = y + vi0;
        const int first = vbounds[2 * (vtab + i)];
        const int count = vbounds[2 * (vtab + i) + 1];
        const inter_t* p = inter + ((long long)(first - r0) * cols + (x - x0)) * CHANNELS;
        resample_px<inter_t, dst_t, false, UNPREMUL_OUT != 0>(
            p, (long long)cols * CHANNELS, 1, count, vweights + vtab * d[R_VK] + i, d[R_VROWS], dst,
            d[R_DST] + (long long)y * d[R_DY] + (long long)x * d[R_DX], d[R_DC], lut);
    }
}
