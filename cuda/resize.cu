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
//   TAB     offset of the image's (first, count) pairs in `bounds` and of its rows of KSIZE
//           weights in `weights`                       KSIZE  weights per output index
//   I0      table index of output 0 along the pass's axis (a crop window's offset)
// Nearest is the same pass with one tap of weight 1 (Pillow's index table as `bounds`).
//
// Preamble defines (the launcher compiles one module per combination):
//   CHANNELS   1, 3 or 4
//   SRC_DTYPE, DST_DTYPE  0: uint8 (both), 1: float32, 2: float16 (IEEE bits in unsigned short);
//              a float16 image keeps a float32 intermediate between the passes, like resizing
//              its float32 conversion and rounding the result once
//   PREMUL_IN  1: premultiply RGBA by alpha on load (Pillow's RGBA -> RGBa), first pass
//   UNPREMUL_OUT 1: undo it on store (RGBa -> RGBA), last pass
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

#define DESC_LEN 14
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

__device__ __forceinline__ double load(const src_t* p) {
#if SRC_DTYPE == 2
    return (double)half_to_float(*p);
#else
    return (double)*p;
#endif
}

// Pillow's MULDIV255: a * b / 255, rounded, in integers.
__device__ __forceinline__ int muldiv255(int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

// One pass along one axis. AXIS 0: horizontal (output x reads source x), 1: vertical.
template <int AXIS>
__device__ __forceinline__ void resample_pass(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
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
    const weight_t* k = weights + (tab + i) * ksize;
    const long long step = AXIS == 0 ? d[F_SX] : d[F_SY];
    const long long base =
        d[F_SRC] + (AXIS == 0 ? (long long)(y + d[F_FIRST]) * d[F_SY] + (long long)first * d[F_SX]
                              : (long long)first * d[F_SY] + (long long)x * d[F_SX]);
    const long long out = d[F_DST] + (long long)y * d[F_DY] + (long long)x * d[F_DX];
#if SRC_DTYPE == 0
    int res[CHANNELS];
    for (int c = 0; c < CHANNELS; ++c) {
        const src_t* p = src + base + c * d[F_SC];
        int ss = 1 << (PRECISION_BITS - 1);
        for (int t = 0; t < count; ++t) {
            int v = p[t * step];
#if PREMUL_IN && CHANNELS == 4
            if (c < 3) v = muldiv255(v, src[base + t * step + 3 * d[F_SC]]);
#endif
            // Pillow sums in int32; unsigned arithmetic gives the same bits without C's
            // signed-overflow undefined behaviour.
            ss = (int)((unsigned int)ss + (unsigned int)(v * k[t]));
        }
        ss >>= PRECISION_BITS;
        res[c] = ss < 0 ? 0 : (ss > 255 ? 255 : ss);
    }
#if UNPREMUL_OUT && CHANNELS == 4
    const int alpha = res[3];
    if (alpha != 0 && alpha != 255) {
        for (int c = 0; c < 3; ++c) {
            const int v = (255 * res[c]) / alpha;
            res[c] = v > 255 ? 255 : v;
        }
    }
#endif
    for (int c = 0; c < CHANNELS; ++c) dst[out + c * d[F_DC]] = (unsigned char)res[c];
#else
    for (int c = 0; c < CHANNELS; ++c) {
        const src_t* p = src + base + c * d[F_SC];
        double ss = 0.0;
        for (int t = 0; t < count; ++t) {
            ss += load(p + t * step) * k[t];
        }
#if DST_DTYPE == 2
        dst[out + c * d[F_DC]] = float_to_half((float)ss);
#else
        dst[out + c * d[F_DC]] = (float)ss;
#endif
    }
#endif
}

extern "C" __global__ void resize_horizontal(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
    resample_pass<0>(src, dst, desc, bounds, weights);
}

extern "C" __global__ void resize_vertical(
    const src_t* __restrict__ src, dst_t* __restrict__ dst, const long long* __restrict__ desc,
    const int* __restrict__ bounds, const weight_t* __restrict__ weights) {
    resample_pass<1>(src, dst, desc, bounds, weights);
}
