//! AVX2 kernels of the resize passes, used where the CPU has AVX2 (`resize_kernels` checks at run
//! time). They compute Pillow's exact integer arithmetic, so their bytes equal the portable
//! kernels' (the tests in `resize_kernels` compare them).
//!
//! Exactness of the horizontal kernel: each 22-bit weight is split as `hi * 2^11 + lo` with
//! `lo` in 0..2048 and `hi = w >> 11` (which fits i16 for |w| < 2^26; `HorizontalTable::new`
//! refuses weights outside that). `_mm256_madd_epi16` multiplies u8 samples (as i16) by `hi` and
//! by `lo` exactly and adds pairs exactly in i32, so `(sum(p * hi) << 11) + sum(p * lo)` equals
//! `sum(p * w)` modulo 2^32: the same i32 that Pillow's loop computes (wrapping adds are a ring
//! homomorphism, so even overflowing sums agree). Pillow's `clip8` (shift, clamp to 0..255) is
//! the arithmetic shift then the saturating packs to i16 and to u8.
use super::resize::PRECISION_BITS;
use super::resize_kernels::{clip8, Taps, BIAS};
#[allow(clippy::wildcard_imports)] // the intrinsics, by their Intel names
use std::arch::x86_64::*;

const SPLIT: u32 = 11;

/// A horizontal pass laid out for `HorizontalTable::rows`: output pixels go in pairs, one per
/// 128-bit half of a vector. RGB and RGBA: a group is two taps, each i32 lane one channel's pair
/// of taps (the fourth lane unused for RGB), so no channel sums need gathering at the end. L: a
/// group is eight taps, the four lanes summed at the end.
pub struct HorizontalTable {
    channels: usize,
    n_out: usize,
    /// Groups of taps per output pixel (every pixel runs them all: weights past its taps are 0).
    groups: usize,
    /// Bytes between the first samples of consecutive groups.
    step: usize,
    /// Output pixels per store: 4 (RGB, RGBA) or 8 (L).
    block: usize,
    /// First byte each output pixel reads, for `n_blocks * block` pixels (the padding pixels
    /// repeat the last offset and have zero weights).
    offs: Vec<usize>,
    /// Per pair of output pixels and group: the `hi` vector, then the `lo` vector.
    w: Vec<[i16; 16]>,
    n_blocks: usize,
    /// Blocks whose 16-byte loads all stay inside the row; the rest read a padded copy.
    safe_blocks: usize,
    row_len: usize,
}

impl HorizontalTable {
    /// None where the kernel does not apply: no AVX2, other channel counts, weights beyond
    /// what the split represents.
    pub fn new(taps: &Taps<'_>, channels: usize, row_len: usize) -> Option<Self> {
        let n_out = taps.bounds.len();
        let fits = |w: i32| i16::try_from(w >> SPLIT).is_ok();
        if !matches!(channels, 1 | 3 | 4)
            || n_out == 0
            || !std::arch::is_x86_feature_detected!("avx2")
            || !taps.kk.iter().all(|&w| fits(w))
        {
            return None;
        }
        let per_group = if channels == 1 { 8 } else { 2 };
        let block = if channels == 1 { 8 } else { 4 };
        let max_taps = taps.bounds.iter().map(|b| b.1).max().unwrap_or(0).max(1);
        let groups = max_taps.div_ceil(per_group);
        let n_blocks = n_out.div_ceil(block);
        let padded = n_blocks * block;
        let mut offs = vec![0usize; padded];
        let mut w = vec![[0i16; 16]; padded / 2 * groups * 2];
        for (xx, off) in offs.iter_mut().enumerate().take(n_out) {
            let (first, k) = taps.get(xx);
            *off = first * channels;
            let half = (xx % 2) * 8;
            for (t, &kw) in k.iter().enumerate() {
                let (hi, lo) = ((kw >> SPLIT) as i16, (kw & ((1 << SPLIT) - 1)) as i16);
                let at = ((xx / 2) * groups + t / per_group) * 2;
                if channels == 1 {
                    w[at][half + t % 8] = hi;
                    w[at + 1][half + t % 8] = lo;
                } else {
                    for c in 0..channels {
                        w[at][half + c * 2 + t % 2] = hi;
                        w[at + 1][half + c * 2 + t % 2] = lo;
                    }
                }
            }
        }
        let last = offs[n_out - 1];
        offs[n_out..].fill(last);
        let step = per_group * channels;
        let reach = (groups - 1) * step + 16;
        let safe_blocks = (0..n_blocks)
            .find(|&b| {
                offs[b * block..(b + 1) * block]
                    .iter()
                    .any(|&o| o + reach > row_len)
            })
            .unwrap_or(n_blocks);
        Some(Self {
            channels,
            n_out,
            groups,
            step,
            block,
            offs,
            w,
            n_blocks,
            safe_blocks,
            row_len,
        })
    }

    /// Whether computing two rows per call pays: long filters, whose weight vectors no longer
    /// stay in L1 over a row, load each vector once for both rows.
    pub fn wants_row_pairs(&self) -> bool {
        self.channels != 1 && self.groups > 5
    }

    /// The pass over `R` rows (1 or 2) of `row_len` bytes into rows of `n_out` pixels.
    pub fn rows<const R: usize>(&self, srcs: [&[u8]; R], outs: [&mut [u8]; R]) {
        let out_len = self.n_out * self.channels;
        for (s, o) in srcs.iter().zip(&outs) {
            assert!(s.len() >= self.row_len && o.len() == out_len, "row sizes");
        }
        let src_ptrs = srcs.map(<[u8]>::as_ptr);
        let out_ptrs = outs.map(<[u8]>::as_mut_ptr);
        // SAFETY: `self` exists only where the CPU has AVX2 (`new`); every load of blocks
        // `..safe_blocks` stays inside the rows (`safe_blocks` in `new`), stores stay inside
        // `out_len` bytes (`store`), and the rows were checked above.
        unsafe { self.dispatch(src_ptrs, 0, out_ptrs, 0, self.safe_blocks) };
        if self.safe_blocks == self.n_blocks {
            return;
        }
        // The last blocks read past the row's end: run them on a copy padded with zeros (their
        // weights there are zero), one row at a time.
        let base = self.offs[self.safe_blocks * self.block..]
            .iter()
            .copied()
            .min()
            .unwrap_or(0);
        let pad = (self.groups - 1) * self.step + 16;
        TAIL.with(|cell| {
            let mut tail = cell.borrow_mut();
            for (s, o) in src_ptrs.iter().zip(out_ptrs) {
                tail.clear();
                // SAFETY: `s` points at a row of at least `row_len` bytes (checked above).
                let row = unsafe { std::slice::from_raw_parts(*s, self.row_len) };
                tail.extend_from_slice(&row[base..]);
                tail.resize(self.row_len - base + pad, 0);
                // SAFETY: as above; every read offset minus `base` plus `pad` is inside `tail`,
                // as offsets are at most `row_len`.
                unsafe {
                    self.dispatch([tail.as_ptr()], base, [o], self.safe_blocks, self.n_blocks);
                }
            }
        });
    }

    #[target_feature(enable = "avx2")]
    unsafe fn dispatch<const R: usize>(
        &self,
        srcs: [*const u8; R],
        base: usize,
        outs: [*mut u8; R],
        b0: usize,
        b1: usize,
    ) {
        // Constant group counts let the compiler unroll the short filters' inner loop.
        // SAFETY: forwarded from the caller.
        unsafe {
            match (self.channels, self.groups) {
                (1, 1) => self.run_l::<R, 1>(srcs, base, outs, b0, b1),
                (1, 2) => self.run_l::<R, 2>(srcs, base, outs, b0, b1),
                (1, _) => self.run_l::<R, 0>(srcs, base, outs, b0, b1),
                (_, 1) => self.run_rgb::<R, 1>(srcs, base, outs, b0, b1),
                (_, 2) => self.run_rgb::<R, 2>(srcs, base, outs, b0, b1),
                (_, 3) => self.run_rgb::<R, 3>(srcs, base, outs, b0, b1),
                (_, 4) => self.run_rgb::<R, 4>(srcs, base, outs, b0, b1),
                (_, 5) => self.run_rgb::<R, 5>(srcs, base, outs, b0, b1),
                _ => self.run_rgb::<R, 0>(srcs, base, outs, b0, b1),
            }
        }
    }

    /// Sums of output pixels `px` and `px + 1` for each row: per 128-bit half, four i32 lanes
    /// (channels, or partial sums for L), before the bias and the shift.
    // Always inlined: these helpers carry no target feature themselves, and their intrinsics
    // only become single AVX2 instructions inside the `avx2` callers.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    unsafe fn pair<const R: usize, const G: usize>(
        &self,
        srcs: [*const u8; R],
        base: usize,
        px: usize,
        mask: __m256i,
        init: __m256i,
    ) -> [__m256i; R] {
        let groups = if G == 0 { self.groups } else { G };
        // SAFETY (whole body): the caller guarantees that `px + 1` is a padded pixel and that
        // reads at its offsets minus `base`, up to `reach`, are inside the rows.
        unsafe {
            let oa = *self.offs.get_unchecked(px) - base;
            let ob = *self.offs.get_unchecked(px + 1) - base;
            let wp = self.w.as_ptr().add(px / 2 * self.groups * 2);
            let mut hi = [_mm256_setzero_si256(); R];
            let mut lo = [init; R];
            for g in 0..groups {
                let wh = _mm256_loadu_si256((*wp.add(2 * g)).as_ptr().cast());
                let wl = _mm256_loadu_si256((*wp.add(2 * g + 1)).as_ptr().cast());
                for r in 0..R {
                    let s = srcs[r];
                    let a = _mm_loadu_si128(s.add(oa + g * self.step).cast());
                    let b = _mm_loadu_si128(s.add(ob + g * self.step).cast());
                    let v = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(a), b);
                    let p = _mm256_shuffle_epi8(v, mask);
                    hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(p, wh));
                    lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(p, wl));
                }
            }
            let mut sums = [_mm256_setzero_si256(); R];
            for r in 0..R {
                sums[r] = _mm256_add_epi32(_mm256_slli_epi32::<{ SPLIT as i32 }>(hi[r]), lo[r]);
            }
            sums
        }
    }

    /// RGB and RGBA: blocks `b0..b1` of four pixels (two pairs).
    #[target_feature(enable = "avx2")]
    unsafe fn run_rgb<const R: usize, const G: usize>(
        &self,
        srcs: [*const u8; R],
        base: usize,
        outs: [*mut u8; R],
        b0: usize,
        b1: usize,
    ) {
        let c = self.channels;
        // i16 lanes of a half: [c0(t) c0(t+1) c1(t) c1(t+1) ...] from the bytes of taps t, t+1.
        let mut m = [-128i8; 32];
        // Four pixels of four i32 lanes, packed to bytes, back to `c` bytes each.
        let mut cm = [-128i8; 16];
        for ch in 0..c {
            for t in 0..2 {
                m[(ch * 2 + t) * 2] = (t * c + ch) as i8;
                m[16 + (ch * 2 + t) * 2] = (t * c + ch) as i8;
            }
            for px in 0..4 {
                cm[px * c + ch] = (px * 4 + ch) as i8;
            }
        }
        // SAFETY (whole body): loads from local arrays; the pixel reads as in `pair`; stores
        // through `store`.
        unsafe {
            let mask = _mm256_loadu_si256(m.as_ptr().cast());
            let compress = _mm_loadu_si128(cm.as_ptr().cast());
            // The bias rides in the `lo` sums (one lane per channel).
            let bias = _mm256_set1_epi32(BIAS);
            for b in b0..b1 {
                let s0 = self.pair::<R, G>(srcs, base, 4 * b, mask, bias);
                let s1 = self.pair::<R, G>(srcs, base, 4 * b + 2, mask, bias);
                for r in 0..R {
                    let v0 = _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(s0[r]);
                    let v1 = _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(s1[r]);
                    // Per half: [px0 px2] / [px1 px3] as i16, then bytes; interleave halves.
                    let w16 = _mm256_packs_epi32(v0, v1);
                    let w8 = _mm256_packus_epi16(w16, w16);
                    let v = _mm_unpacklo_epi32(
                        _mm256_castsi256_si128(w8),
                        _mm256_extracti128_si256::<1>(w8),
                    );
                    self.store(outs[r], b, _mm_shuffle_epi8(v, compress));
                }
            }
        }
    }

    /// L: blocks `b0..b1` of eight pixels (four pairs), each pixel's four lanes added up.
    #[target_feature(enable = "avx2")]
    unsafe fn run_l<const R: usize, const G: usize>(
        &self,
        srcs: [*const u8; R],
        base: usize,
        outs: [*mut u8; R],
        b0: usize,
        b1: usize,
    ) {
        let mut m = [-128i8; 32];
        for t in 0..8 {
            m[t * 2] = t as i8;
            m[16 + t * 2] = t as i8;
        }
        // SAFETY (whole body): as in `run_rgb`.
        unsafe {
            let mask = _mm256_loadu_si256(m.as_ptr().cast());
            let zero = _mm256_setzero_si256();
            let bias = _mm256_set1_epi32(BIAS);
            for b in b0..b1 {
                let s0 = self.pair::<R, G>(srcs, base, 8 * b, mask, zero);
                let s1 = self.pair::<R, G>(srcs, base, 8 * b + 2, mask, zero);
                let s2 = self.pair::<R, G>(srcs, base, 8 * b + 4, mask, zero);
                let s3 = self.pair::<R, G>(srcs, base, 8 * b + 6, mask, zero);
                for r in 0..R {
                    // Halves hold pixels [0 2 4 6] and [1 3 5 7] after the two rounds.
                    let h = _mm256_hadd_epi32(
                        _mm256_hadd_epi32(s0[r], s1[r]),
                        _mm256_hadd_epi32(s2[r], s3[r]),
                    );
                    let v =
                        _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(_mm256_add_epi32(h, bias));
                    let w16 = _mm256_packs_epi32(v, v);
                    let w8 = _mm256_packus_epi16(w16, w16);
                    let v = _mm_unpacklo_epi8(
                        _mm256_castsi256_si128(w8),
                        _mm256_extracti128_si256::<1>(w8),
                    );
                    self.store(outs[r], b, v);
                }
            }
        }
    }

    /// Writes block `b` (its first `block * channels` bytes of `v`) into a row of `n_out`
    /// pixels: a full-width store where the row has room (bytes past the block belong to later
    /// blocks, written after), else only the pixels that exist.
    #[allow(clippy::inline_always)] // as `pair`
    #[inline(always)]
    unsafe fn store(&self, out: *mut u8, b: usize, v: __m128i) {
        let at = b * self.block * self.channels;
        let len = self.n_out * self.channels;
        let width = if self.channels == 1 { 8 } else { 16 };
        // SAFETY: `out` holds `len` bytes (checked in `rows`); both branches stay inside.
        unsafe {
            if at + width <= len {
                if width == 8 {
                    _mm_storel_epi64(out.add(at).cast(), v);
                } else {
                    _mm_storeu_si128(out.add(at).cast(), v);
                }
            } else {
                let mut bytes = [0u8; 16];
                _mm_storeu_si128(bytes.as_mut_ptr().cast(), v);
                let n = (self.block * self.channels).min(len - at);
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.add(at), n);
            }
        }
    }
}

thread_local! {
    static TAIL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sixteen outputs per step: widen 16 bytes of each tap's row to i32, multiply by the weight,
/// add; then shift and pack with saturation (= Pillow's clip8). Tap `y` reads the bytes of
/// `src` from `offs[y]`.
///
/// # Safety
/// The CPU has AVX2, and `offs[y] + out.len() <= src.len()` for every `y` in `0..k.len()`.
#[target_feature(enable = "avx2")]
pub unsafe fn vertical(src: &[u8], offs: &[usize], k: &[i32], out: &mut [u8]) {
    let len = out.len();
    let mut i = 0;
    while i + 16 <= len {
        let mut a0 = _mm256_set1_epi32(BIAS);
        let mut a1 = _mm256_set1_epi32(BIAS);
        for (&o, &w) in offs.iter().zip(k) {
            // SAFETY: o + i + 16 <= o + out.len() <= src.len() (the caller's promise).
            let b = unsafe { _mm_loadu_si128(src.as_ptr().add(o + i).cast()) };
            let wv = _mm256_set1_epi32(w);
            let p0 = _mm256_cvtepu8_epi32(b);
            let p1 = _mm256_cvtepu8_epi32(_mm_srli_si128::<8>(b));
            a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(p0, wv));
            a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(p1, wv));
        }
        let s0 = _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(a0);
        let s1 = _mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(a1);
        // packs works within 128-bit lanes; permute restores the order.
        let w16 = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(s0, s1));
        let b8 = _mm256_packus_epi16(w16, w16);
        let b8 = _mm256_permute4x64_epi64::<0b11_01_10_00>(b8);
        // SAFETY: i + 16 <= out.len().
        unsafe { _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), _mm256_castsi256_si128(b8)) };
        i += 16;
    }
    for (j, px) in out.iter_mut().enumerate().skip(i) {
        let mut acc = BIAS;
        for (&o, &w) in offs.iter().zip(k) {
            acc = acc.wrapping_add(i32::from(src[o + j]).wrapping_mul(w));
        }
        *px = clip8(acc);
    }
}

/// Pillow's RGBA -> RGBa (`MULDIV255`: `t = v * a + 128; ((t >> 8) + t) >> 8`) on eight pixels
/// per step in u16 lanes: `t` is at most 255 * 255 + 128 and `(t >> 8) + t` at most 65407, so
/// nothing wraps. Alpha is multiplied by 255, which the formula returns unchanged.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn premultiply(src: &[u8], dst: &mut [u8]) {
    let n = src.len().min(dst.len()) / 32 * 32;
    // Per i16 lane of a half (two pixels after unpacking): the pixel's alpha byte for colour
    // lanes, nothing (filled with 255 below) for its alpha lane.
    let mut m = [-128i8; 32];
    for half in 0..2 {
        for px in 0..2 {
            for c in 0..3 {
                m[half * 16 + px * 8 + c * 2] = (px * 4 + 3) as i8;
            }
        }
    }
    // SAFETY: loads from a local array; the row loads and stores stay below `n`.
    unsafe {
        let amask_lo = _mm256_loadu_si256(m.as_ptr().cast());
        // The same for the pixels of the unpackhi half (bytes 8..16 of each 128-bit lane).
        let mut mh = m;
        for v in &mut mh {
            if *v >= 0 {
                *v += 8;
            }
        }
        let amask_hi = _mm256_loadu_si256(mh.as_ptr().cast());
        let alpha255 = _mm256_set1_epi64x(0x00ff_0000_0000_0000);
        let zero = _mm256_setzero_si256();
        let mut i = 0;
        while i < n {
            let v = _mm256_loadu_si256(src.as_ptr().add(i).cast());
            let a_lo = _mm256_or_si256(_mm256_shuffle_epi8(v, amask_lo), alpha255);
            let a_hi = _mm256_or_si256(_mm256_shuffle_epi8(v, amask_hi), alpha255);
            let lo = muldiv255(_mm256_unpacklo_epi8(v, zero), a_lo);
            let hi = muldiv255(_mm256_unpackhi_epi8(v, zero), a_hi);
            _mm256_storeu_si256(dst.as_mut_ptr().add(i).cast(), _mm256_packus_epi16(lo, hi));
            i += 32;
        }
    }
    super::resize_kernels::premultiply_scalar(&src[n..], &mut dst[n..]);
}

/// `MULDIV255` on u16 lanes (see `premultiply`).
#[target_feature(enable = "avx2")]
fn muldiv255(v: __m256i, a: __m256i) -> __m256i {
    let t = _mm256_add_epi16(_mm256_mullo_epi16(v, a), _mm256_set1_epi16(128));
    _mm256_srli_epi16::<8>(_mm256_add_epi16(_mm256_srli_epi16::<8>(t), t))
}
