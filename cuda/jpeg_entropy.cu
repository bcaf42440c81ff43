// Huffman (entropy) decoding of baseline JPEG scans on the GPU, a whole batch in one pass, into
// the quantized DCT coefficients that cuda/jpeg_idct.cu reads: int16, per component a plane of
// width_in_blocks x height_in_blocks blocks, 64 per block in natural order. The coefficients equal
// libjpeg-turbo's (jdhuff.c decode_mcu) bit for bit on every file the host sends here; a scan the
// kernels find damaged is flagged in `status`, and the host decodes that file on the CPU, where
// libjpeg-turbo decides (a DecodeError, or its own repair).
//
// Written from Weissenberger & Schmidt, "Massively parallel Huffman decoding on GPUs" (ICPP
// 2018) and "Accelerating JPEG Decompression on GPUs" (arXiv 2111.09219): the method, not code.
//
//   1. jpeg_unstuff_count / jpeg_tile_offsets / jpeg_unstuff_write: the scan's bytes lose their
//      stuffing (0xFF00 -> 0xFF) and restart markers, tile by tile (a prefix sum over tiles gives
//      each tile's output position); a restart marker's output position starts a segment.
//   2. jpeg_chunk_layout: each segment (a restart interval, or the whole scan) is cut into
//      chunks of CHUNK_BITS bits; chunk slots are laid out per image.
//   3. jpeg_sync: one thread per chunk decodes from its chunk's start as if a block's DC began
//      there, up to the first symbol boundary past the chunk's end: its exit state (bit position,
//      block of the MCU, coefficient index). Huffman codes synchronise by themselves, so a decoder
//      started at the right state (the previous chunk's exit) soon meets the same states; each
//      thread takes its predecessor's exit as its entry and decodes again until no entry changes
//      (within the block), then the first chunk takes the previous block's final exit (a chained
//      look-back, in ticket order so that it cannot deadlock) and the block settles again.
//   4. jpeg_chunk_scan: a segmented prefix sum over the chunks (segment starts: image and
//      restart-interval boundaries) of blocks finished and DC differences per component gives each
//      chunk its first block and its DC predictors.
//   5. jpeg_write: each chunk decodes once more from its settled entry state and writes its
//      coefficients, DC = predictor + difference.
//
// Device-side descriptor per image: desc[n * EDESC_LEN + field] (int64), see E_* below.
#define TILE_THREADS 128
#define TILE_BYTES_PER_THREAD 8
#define TILE_BYTES (TILE_THREADS * TILE_BYTES_PER_THREAD)
#define SYNC_THREADS 128
#define CHUNK_BITS 1024

#define EDESC_LEN 64
#define E_SRC 0     // byte offset of the scan in `src` (a multiple of TILE_BYTES); the unstuffed
                    // bytes go to the same offset of `bits`
#define E_LEN 1     // bytes of the (stuffed) scan
#define E_SEG0 2    // first of the image's segment slots
#define E_NSEG 3    // segments the restart interval implies
#define E_CHUNK0 4  // first chunk slot (a multiple of SYNC_THREADS)
#define E_NCHUNK 5  // chunk slots reserved (an upper bound)
#define E_RI 6      // restart interval in MCUs (0: none)
#define E_MCUS 7    // MCUs in the scan
#define E_BPM 8     // blocks per MCU
#define E_MCUX 9    // MCUs per MCU row
#define E_NCOMP 10  // components in the scan
#define U_BASE 16   // per block u of the MCU (up to 10): [U_BASE + 2u] scan component,
                    // [U_BASE + 2u + 1] its block column + 256 * its block row in the MCU
#define S_BASE 36   // per scan component s (up to 4), S_LEN fields:
#define S_LEN 7
#define S_COEF 0  // element offset of the component's coefficient plane in `coefs`
#define S_WB 1    // blocks per row, block rows of the plane
#define S_HB 2
#define S_H 3  // blocks per MCU across and down (1 and 1 in a one-component scan)
#define S_V 4
#define S_DC 5  // Huffman table index of the DC and AC tables in `tables`
#define S_AC 6

// A Huffman table in `tables` (int32, HT_LEN per table), built by the host as libjpeg's
// jpeg_make_d_derived_tbl does: HT_LUT 512 entries for the next 9 bits (length << 8 | symbol, 0
// when the code is longer), HT_MAX[l] libjpeg's maxcode (-1: no code of length l), HT_OFF[l]
// valoffset, HT_VAL the symbols.
#define HT_LUT 0
#define HT_MAX 512
#define HT_OFF 529
#define HT_VAL 546
#define HT_LEN 802

// Chunk values (int32, CV_LEN per chunk slot): the entry's context (block of the MCU * 64 +
// coefficient index), blocks finished, then DC per scan component. jpeg_sync stores the chunk's
// own counts; jpeg_chunk_scan turns them into what comes before the chunk in its segment.
#define CV_CTX 0
#define CV_BLK 1
#define CV_DC 2
#define CV_LEN 6

// Status bits per image: anything set sends the file to the CPU decoder.
#define ST_MARKER 1     // a marker other than RSTn inside the scan, or a stray 0xFF
#define ST_RESTART 2    // restart markers out of sequence or not as many as the interval implies
#define ST_SHORT 4      // a segment ran out of data before its last block
#define ST_BAD_CODE 8   // a bit pattern that is no code of the table
#define ST_LAYOUT 16    // more chunks than reserved, or a look-back that waited too long (neither can
                        // happen in a well-formed launch)

// jpeg_natural_order of jutils.c: zigzag index -> natural (row-major) index. libjpeg pads it with
// 16 entries of 63 so that a run past the block's end writes the last coefficient; so does this.
__constant__ unsigned char kNaturalOrder[64] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48,
    41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23,
    30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};
__device__ __forceinline__ int natural_order(int k) { return k < 64 ? kNaturalOrder[k] : 63; }

// --- 1. unstuffing ------------------------------------------------------------------------------

// What byte i of an image's scan (`len` bytes at `p`) contributes: 1 if kept, 0 if dropped; a
// restart marker's number (0-7) in *rst, else -1; *bad for a byte that cannot be in a scan.
__device__ __forceinline__ int scan_byte(const unsigned char* p, long long i, long long len, int* rst, bool* bad) {
    const int b = p[i];
    const int prev = i > 0 ? p[i - 1] : 0;
    *rst = -1;
    if (b == 0xFF) {
        const int next = i + 1 < len ? p[i + 1] : -1;
        if (next == 0x00) return 1;
        if (next < 0xD0 || next > 0xD7) *bad = true;
        return 0;
    }
    if (prev == 0xFF) {
        if (b >= 0xD0 && b <= 0xD7) *rst = b - 0xD0;
        return 0;  // the 0x00 of a stuffed 0xFF, or the code of a marker
    }
    return 1;
}

// Block-wide exclusive prefix sum of `v` over TILE_THREADS threads (warp shuffles, then the warp
// totals through shared memory); *total gets the block's sum.
__device__ int block_exclusive_sum(int v, int* total) {
    __shared__ int warp_sums[TILE_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int x = v;
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, d);
        if (lane >= d) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    int before = 0, sum = 0;
    for (int w = 0; w < TILE_THREADS / 32; ++w) {
        if (w < warp) before += warp_sums[w];
        sum += warp_sums[w];
    }
    __syncthreads();  // warp_sums is read before anyone writes it again
    *total = sum;
    return before + x - v;
}

// Kept bytes and restart markers per tile: tile_cnt[2t], tile_cnt[2t + 1].
extern "C" __global__ void jpeg_unstuff_count(const unsigned char* __restrict__ src, const long long* __restrict__ desc,
                                              const int* __restrict__ tile_img, int n_tiles, int* __restrict__ tile_cnt) {
    const int t = blockIdx.x;
    if (t >= n_tiles) return;
    const long long* d = desc + (long long)tile_img[t] * EDESC_LEN;
    const long long len = d[E_LEN];
    const long long first = (long long)t * TILE_BYTES - d[E_SRC];
    int keep = 0, rst = 0;
    bool bad = false;
    for (int k = 0; k < TILE_BYTES_PER_THREAD; ++k) {
        const long long i = first + threadIdx.x * TILE_BYTES_PER_THREAD + k;
        if (i >= len) break;
        int r;
        keep += scan_byte(src + d[E_SRC], i, len, &r, &bad);
        rst += r >= 0;
    }
    int keep_total, rst_total;
    block_exclusive_sum(keep, &keep_total);
    block_exclusive_sum(rst, &rst_total);
    if (threadIdx.x == 0) {
        tile_cnt[2 * t] = keep_total;
        tile_cnt[2 * t + 1] = rst_total;
    }
}

// Per image (one thread each): the tiles' counts become exclusive prefix sums within the image;
// img_info[2n] the unstuffed length, img_info[2n + 1] the restart markers found.
extern "C" __global__ void jpeg_tile_offsets(const long long* __restrict__ desc, int n_images, int* __restrict__ tile_cnt,
                                             long long* __restrict__ img_info) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_images) return;
    const long long* d = desc + (long long)n * EDESC_LEN;
    const long long t0 = d[E_SRC] / TILE_BYTES;
    const long long tiles = (d[E_LEN] + TILE_BYTES - 1) / TILE_BYTES;
    long long keep = 0, rst = 0;
    for (long long t = t0; t < t0 + tiles; ++t) {
        const int k = tile_cnt[2 * t], r = tile_cnt[2 * t + 1];
        tile_cnt[2 * t] = (int)keep;
        tile_cnt[2 * t + 1] = (int)rst;
        keep += k;
        rst += r;
    }
    img_info[2 * n] = keep;
    img_info[2 * n + 1] = rst;
}

// The unstuffed bytes, and each restart marker's position (image-relative byte) as the start of
// segment number + 1 in seg_start.
extern "C" __global__ void jpeg_unstuff_write(const unsigned char* __restrict__ src, const long long* __restrict__ desc,
                                              const int* __restrict__ tile_img, int n_tiles,
                                              const int* __restrict__ tile_cnt, unsigned char* __restrict__ bits,
                                              int* __restrict__ seg_start, int* __restrict__ status) {
    const int t = blockIdx.x;
    if (t >= n_tiles) return;
    const int n = tile_img[t];
    const long long* d = desc + (long long)n * EDESC_LEN;
    const long long len = d[E_LEN];
    const unsigned char* p = src + d[E_SRC];
    const long long first = (long long)t * TILE_BYTES - d[E_SRC] + threadIdx.x * TILE_BYTES_PER_THREAD;
    int keep = 0, rst = 0;
    bool bad = false;
    for (int k = 0; k < TILE_BYTES_PER_THREAD && first + k < len; ++k) {
        int r;
        keep += scan_byte(p, first + k, len, &r, &bad);
        rst += r >= 0;
    }
    int total;
    long long out = tile_cnt[2 * t] + block_exclusive_sum(keep, &total);
    int ordinal = tile_cnt[2 * t + 1] + block_exclusive_sum(rst, &total);
    unsigned char* o = bits + d[E_SRC];
    int flags = bad ? ST_MARKER : 0;
    for (int k = 0; k < TILE_BYTES_PER_THREAD && first + k < len; ++k) {
        int r;
        bool b2 = false;
        if (scan_byte(p, first + k, len, &r, &b2)) o[out++] = p[first + k];
        if (r >= 0) {
            // the k-th marker must be RST(k mod 8) and start one of the segments the interval implies
            if (r != (ordinal & 7) || ordinal + 1 >= d[E_NSEG]) flags |= ST_RESTART;
            else seg_start[d[E_SEG0] + ordinal + 1] = (int)out;
            ++ordinal;
        }
    }
    if (flags) atomicOr(status + n, flags);
}

// --- 2. chunks ----------------------------------------------------------------------------------

// Per image (one thread each): segment 0 starts at byte 0; each segment gets ceil(bits /
// CHUNK_BITS) chunk slots (at least one, so that an empty segment is seen to be short);
// chunk_seg[slot] is the slot's segment (-1: unused), seg_chunk0[segment] its first slot.
extern "C" __global__ void jpeg_chunk_layout(const long long* __restrict__ desc, int n_images,
                                             const long long* __restrict__ img_info, int* __restrict__ seg_start,
                                             int* __restrict__ seg_chunk0, int* __restrict__ chunk_seg,
                                             int* __restrict__ status) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= n_images) return;
    const long long* d = desc + (long long)n * EDESC_LEN;
    const long long nseg = d[E_NSEG], seg0 = d[E_SEG0], c0 = d[E_CHUNK0], nchunk = d[E_NCHUNK];
    const long long ulen = img_info[2 * n];
    seg_start[seg0] = 0;
    if (img_info[2 * n + 1] != nseg - 1) {
        // not as many restart markers as the interval implies: libjpeg-turbo decides on the CPU
        atomicOr(status + n, ST_RESTART);
        for (long long c = c0; c < c0 + nchunk; ++c) chunk_seg[c] = -1;
        return;
    }
    long long slot = c0;
    for (long long k = 0; k < nseg; ++k) {
        const long long lo = seg_start[seg0 + k];
        const long long hi = k + 1 < nseg ? seg_start[seg0 + k + 1] : ulen;
        long long chunks = ((hi - lo) * 8 + CHUNK_BITS - 1) / CHUNK_BITS;
        if (chunks < 1) chunks = 1;
        if (slot + chunks > c0 + nchunk) {
            atomicOr(status + n, ST_LAYOUT);
            break;
        }
        seg_chunk0[seg0 + k] = (int)slot;
        for (long long c = 0; c < chunks; ++c) chunk_seg[slot + c] = (int)k;
        slot += chunks;
    }
    for (; slot < c0 + nchunk; ++slot) chunk_seg[slot] = -1;
}

// --- the decoder --------------------------------------------------------------------------------

// 32 bits of `bits` from bit `pos`, MSB first; bytes at or past `end_byte` read as 0 (libjpeg
// feeds zeros once it meets the marker that ends the segment).
__device__ __forceinline__ unsigned peek32(const unsigned char* bits, long long pos, long long end_byte) {
    const long long at = pos >> 3;
    unsigned long long v = 0;
    for (int k = 0; k < 5; ++k) v = (v << 8) | (at + k < end_byte ? bits[at + k] : 0u);
    return (unsigned)(v >> (8 - (pos & 7)));
}

// The next symbol of table `t` from the 16 bits `p16`: libjpeg's canonical decoding (the
// shortest length l whose code is <= maxcode[l]). false for a pattern that is no code.
__device__ __forceinline__ bool huff_decode(const int* __restrict__ t, unsigned p16, int* len, int* sym) {
    const int e = t[HT_LUT + (p16 >> 7)];
    if (e) {
        *len = e >> 8;
        *sym = e & 255;
        return true;
    }
    for (int l = 10; l <= 16; ++l) {
        const int code = (int)(p16 >> (16 - l));
        if (code <= t[HT_MAX + l]) {
            *len = l;
            *sym = t[HT_VAL + ((code + t[HT_OFF + l]) & 255)];
            return true;
        }
    }
    *len = 16;
    *sym = 0;
    return false;
}

// Where block `blk` of the scan (counted from the scan's start) lies in `coefs`; null for the
// padding blocks of an MCU past the component's edge.
__device__ __forceinline__ short* block_at(const long long* d, short* coefs, long long blk) {
    const long long bpm = d[E_BPM];
    const long long m = blk / bpm;
    const int u = (int)(blk - m * bpm);
    const long long* s = d + S_BASE + d[U_BASE + 2 * u] * S_LEN;
    const int hv = (int)d[U_BASE + 2 * u + 1];
    const long long mx = m % d[E_MCUX], my = m / d[E_MCUX];
    const long long bx = mx * s[S_H] + (hv & 255), by = my * s[S_V] + (hv >> 8);
    if (bx >= s[S_WB] || by >= s[S_HB]) return nullptr;
    return coefs + s[S_COEF] + (by * s[S_WB] + bx) * 64;
}

// Decodes symbols from state (*pos, *ctx) while *pos < stop (bit positions in `bits`; end_byte
// ends the segment). WRITE = false (jpeg_sync): counts finished blocks in *nblk and sums the DC
// differences per scan component in dc[]. WRITE = true (jpeg_write): `blk` is the segment's block
// the entry state is in, dc[] the predictors; stops after the segment's `seg_blocks` blocks and
// writes each coefficient (`seg_base`: the segment's first block in the scan), flagging what
// libjpeg-turbo would not decode silently.
template <bool WRITE>
__device__ void decode(const unsigned char* __restrict__ bits, long long end_byte, long long stop,
                       const long long* __restrict__ d, const int* __restrict__ tables, long long* pos, int* ctx,
                       int* nblk, int* dc, long long blk, long long seg_blocks, long long seg_base,
                       short* __restrict__ coefs, int* flags) {
    const int bpm = (int)d[E_BPM];
    long long p = *pos;
    int u = *ctx >> 6, z = *ctx & 63;
    short* out = nullptr;
    if (WRITE && blk < seg_blocks) out = block_at(d, coefs, seg_base + blk);
    while (p < stop) {
        if (WRITE && blk >= seg_blocks) break;
        const int s = (int)d[U_BASE + 2 * u];
        const long long* sd = d + S_BASE + s * S_LEN;
        const unsigned w = peek32(bits, p, end_byte);
        int len, sym;
        const bool ok = huff_decode(tables + (z == 0 ? sd[S_DC] : sd[S_AC]) * HT_LEN, w >> 16, &len, &sym);
        const int size = sym & 15;
        const int extra = z == 0 ? (sym > 15 ? 15 : sym) : size;  // DC tables hold sizes <= 15
        int value = 0;
        if (extra) {
            const unsigned r = (w << len) >> (32 - extra);
            // HUFF_EXTEND of jdhuff.h
            value = r < (1u << (extra - 1)) ? (int)r - (1 << extra) + 1 : (int)r;
        }
        p += len + extra;
        if (WRITE) {
            if (!ok) *flags |= ST_BAD_CODE;
            if (p > end_byte * 8) *flags |= ST_SHORT;  // libjpeg-turbo: "premature end of data segment"
        }
        if (z == 0) {
            dc[s] += value;
            if (WRITE && out) out[0] = (short)dc[s];
            z = 1;
        } else if (size) {
            z += sym >> 4;
            if (WRITE && out) out[natural_order(z)] = (short)value;
            z += 1;
        } else if ((sym >> 4) == 15) {
            z += 16;
        } else {
            z = 64;  // end of block
        }
        if (z >= 64) {
            z = 0;
            u = u + 1 == bpm ? 0 : u + 1;
            if (WRITE) {
                ++blk;
                out = blk < seg_blocks ? block_at(d, coefs, seg_base + blk) : nullptr;
            } else {
                ++*nblk;
            }
        }
    }
    *pos = p;
    *ctx = u * 64 + z;
}

// The blocks of segment k of an image and its first block in the scan.
__device__ __forceinline__ void segment_blocks(const long long* d, long long k, long long* count, long long* base) {
    const long long ri = d[E_RI], mcus = d[E_MCUS];
    const long long first = ri ? k * ri : 0;
    const long long last = ri ? (first + ri < mcus ? first + ri : mcus) : mcus;
    *count = (last - first) * d[E_BPM];
    *base = first * d[E_BPM];
}

// The bit range of chunk `slot` (segment k of image n): [*lo, *hi), and the segment's end byte.
__device__ __forceinline__ void chunk_range(const long long* d, const long long* img_info, int n, const int* seg_start,
                                            const int* seg_chunk0, int k, long long slot, long long* lo,
                                            long long* hi, long long* end_byte) {
    const long long base = d[E_SRC];
    const long long seg_lo = base + seg_start[d[E_SEG0] + k];
    *end_byte = k + 1 < d[E_NSEG] ? base + seg_start[d[E_SEG0] + k + 1] : base + img_info[2 * n];
    *lo = seg_lo * 8 + (slot - seg_chunk0[d[E_SEG0] + k]) * CHUNK_BITS;
    *hi = *lo + CHUNK_BITS < *end_byte * 8 ? *lo + CHUNK_BITS : *end_byte * 8;
}

// --- 3. synchronisation -------------------------------------------------------------------------

// One thread per chunk slot, SYNC_THREADS slots per block, blocks taken in ticket order
// (*ticket starts at 0, done[] at 0). Writes each slot's settled entry (ch_pos, ch_val[CV_CTX])
// and its counts (ch_val[CV_BLK], ch_val[CV_DC + s]).
extern "C" __global__ void jpeg_sync(const unsigned char* __restrict__ bits, const long long* __restrict__ desc,
                                     const int* __restrict__ tables, const long long* __restrict__ img_info,
                                     const int* __restrict__ seg_start, const int* __restrict__ seg_chunk0,
                                     const int* __restrict__ chunk_seg, const int* __restrict__ block_img,
                                     int* ticket, int* done, long long* exits, long long* __restrict__ ch_pos,
                                     int* __restrict__ ch_val, int* __restrict__ status) {
    __shared__ int blk_shared;
    __shared__ long long exit_pos[SYNC_THREADS];
    __shared__ int exit_ctx[SYNC_THREADS];
    if (threadIdx.x == 0) blk_shared = atomicAdd(ticket, 1);
    __syncthreads();
    const int blk = blk_shared;
    const int tid = threadIdx.x;
    const int n = block_img[blk];
    const long long* d = desc + (long long)n * EDESC_LEN;
    const long long slot = (long long)blk * SYNC_THREADS + tid;
    const int k = chunk_seg[slot];
    const bool valid = k >= 0;
    const bool first = !valid || slot == seg_chunk0[d[E_SEG0] + k];
    long long lo = 0, hi = 0, end_byte = 0;
    if (valid) chunk_range(d, img_info, n, seg_start, seg_chunk0, k, slot, &lo, &hi, &end_byte);
    long long entry_pos = lo;
    int entry_ctx = 0;
    int nblk = 0, dc[4] = {0, 0, 0, 0};
    long long xp = lo;
    int xc = 0;
    if (valid) decode<false>(bits, end_byte, hi, d, tables, &xp, &xc, &nblk, dc, 0, 0, 0, nullptr, nullptr);
    exit_pos[tid] = xp;
    exit_ctx[tid] = xc;
    for (int round = 0; round < 2; ++round) {
        bool have_prev = false;
        long long prev_pos = 0;
        int prev_ctx = 0;
        if (round == 1 && tid == 0 && valid && !first) {
            // the previous block (same image, same segment) has published its last chunk's exit
            // (bounded: a predecessor that never publishes, which a correct launch cannot give,
            // flags the image for the CPU decoder instead of hanging the device)
            for (long long spin = 0; atomicAdd(done + blk - 1, 0) == 0; ++spin) {
                if (spin > (1LL << 24)) {
                    atomicOr(status + n, ST_LAYOUT);
                    break;
                }
                __nanosleep(64);
            }
            __threadfence();
            prev_pos = ((volatile long long*)exits)[2 * (blk - 1)];
            prev_ctx = (int)((volatile long long*)exits)[2 * (blk - 1) + 1];
            have_prev = true;
        }
        for (;;) {
            __syncthreads();
            long long cand_pos = entry_pos;
            int cand_ctx = entry_ctx;
            if (valid && !first && tid > 0) {
                cand_pos = exit_pos[tid - 1];
                cand_ctx = exit_ctx[tid - 1];
            } else if (have_prev) {
                cand_pos = prev_pos;
                cand_ctx = prev_ctx;
            }
            __syncthreads();
            const bool changed = valid && (cand_pos != entry_pos || cand_ctx != entry_ctx);
            if (changed) {
                entry_pos = cand_pos;
                entry_ctx = cand_ctx;
                xp = entry_pos;
                xc = entry_ctx;
                nblk = 0;
                dc[0] = dc[1] = dc[2] = dc[3] = 0;
                // an entry already past the chunk's end (a long code across it) decodes nothing
                decode<false>(bits, end_byte, hi, d, tables, &xp, &xc, &nblk, dc, 0, 0, 0, nullptr, nullptr);
                exit_pos[tid] = xp;
                exit_ctx[tid] = xc;
            }
            if (!__syncthreads_or(changed)) break;
        }
    }
    if (tid == SYNC_THREADS - 1) {
        exits[2 * blk] = exit_pos[tid];
        exits[2 * blk + 1] = exit_ctx[tid];
        __threadfence();
        atomicAdd(done + blk, 1);
    }
    ch_pos[slot] = entry_pos;
    int* v = ch_val + slot * CV_LEN;
    v[CV_CTX] = entry_ctx;
    v[CV_BLK] = valid ? nblk : 0;
    for (int s = 0; s < 4; ++s) v[CV_DC + s] = valid ? dc[s] : 0;
}

// --- 4. segmented prefix sums -------------------------------------------------------------------

// One block per image: over its chunk slots in order, the sums of CV_BLK and CV_DC + s since the
// segment's start become exclusive (what comes before the chunk). A segment that finishes fewer
// blocks than its restart interval holds is short (ST_SHORT).
extern "C" __global__ void jpeg_chunk_scan(const long long* __restrict__ desc, const int* __restrict__ chunk_seg,
                                           int* __restrict__ ch_val, int* __restrict__ status) {
    __shared__ int warp_val[SYNC_THREADS / 32];
    __shared__ int warp_flag[SYNC_THREADS / 32];
    __shared__ int carry[CV_LEN];
    const int n = blockIdx.x;
    const long long* d = desc + (long long)n * EDESC_LEN;
    const long long c0 = d[E_CHUNK0], nchunk = d[E_NCHUNK];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x < CV_LEN) carry[threadIdx.x] = 0;
    for (long long t0 = 0; t0 < nchunk; t0 += SYNC_THREADS) {
        const long long slot = c0 + t0 + threadIdx.x;
        const bool in = t0 + threadIdx.x < nchunk;
        const int k = in ? chunk_seg[slot] : -1;
        const int prev_k = !in ? -1 : (t0 + threadIdx.x == 0 ? -2 : chunk_seg[slot - 1]);
        const int head = k != prev_k;  // a segment starts here (unused slots start their own)
        const int next_k = in && t0 + threadIdx.x + 1 < nchunk ? chunk_seg[slot + 1] : -1;
        for (int f = CV_BLK; f < CV_LEN; ++f) {
            const int own = in ? ch_val[slot * CV_LEN + f] : 0;
            // segmented inclusive scan: (flag, value) pairs, a set flag stops the sum
            int x = own, fl = head;
            for (int dd = 1; dd < 32; dd <<= 1) {
                const int y = __shfl_up_sync(0xffffffffu, x, dd);
                const int g = __shfl_up_sync(0xffffffffu, fl, dd);
                if (lane >= dd) {
                    if (!fl) x += y;
                    fl |= g;
                }
            }
            __syncthreads();
            if (lane == 31) {
                warp_val[warp] = x;
                warp_flag[warp] = fl;
            }
            __syncthreads();
            // what comes before this warp: earlier warps of the tile, then the carry of the
            // earlier tiles, each up to the nearest segment start
            int before = 0;
            bool stop = false;
            for (int w = warp - 1; w >= 0 && !stop; --w) {
                before += warp_val[w];
                stop = warp_flag[w];
            }
            if (!stop) before += carry[f];
            const int incl = fl ? x : x + before;
            if (in) {
                ch_val[slot * CV_LEN + f] = incl - own;
                if (f == CV_BLK && k >= 0 && next_k != k) {
                    long long count, base;
                    segment_blocks(d, k, &count, &base);
                    if (incl < count) atomicOr(status + n, ST_SHORT);
                }
            }
            __syncthreads();
            if (threadIdx.x == SYNC_THREADS - 1) carry[f] = incl;
            __syncthreads();
        }
    }
}

// --- 5. the write pass --------------------------------------------------------------------------

// One thread per chunk slot: decodes from the settled entry and writes the coefficients into
// `coefs` (zeroed before: the decoder writes only the coefficients coded).
extern "C" __global__ void jpeg_write(const unsigned char* __restrict__ bits, const long long* __restrict__ desc,
                                      const int* __restrict__ tables, const long long* __restrict__ img_info,
                                      const int* __restrict__ seg_start, const int* __restrict__ seg_chunk0,
                                      const int* __restrict__ chunk_seg, const int* __restrict__ block_img,
                                      const long long* __restrict__ ch_pos, const int* __restrict__ ch_val,
                                      short* __restrict__ coefs, int* __restrict__ status) {
    const long long slot = (long long)blockIdx.x * SYNC_THREADS + threadIdx.x;
    const int n = block_img[blockIdx.x];
    const long long* d = desc + (long long)n * EDESC_LEN;
    const int k = chunk_seg[slot];
    if (k < 0 || status[n]) return;
    long long lo, hi, end_byte;
    chunk_range(d, img_info, n, seg_start, seg_chunk0, k, slot, &lo, &hi, &end_byte);
    long long count, base;
    segment_blocks(d, k, &count, &base);
    const int* v = ch_val + slot * CV_LEN;
    long long pos = ch_pos[slot];
    int ctx = v[CV_CTX];
    int dc[4] = {v[CV_DC], v[CV_DC + 1], v[CV_DC + 2], v[CV_DC + 3]};
    int flags = 0, unused = 0;
    decode<true>(bits, end_byte, hi, d, tables, &pos, &ctx, &unused, dc, v[CV_BLK], count, base, coefs, &flags);
    if (flags) atomicOr(status + n, flags);
}
