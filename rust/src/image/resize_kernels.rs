//! The inner loops of the resize passes: a portable version, and x86 SIMD versions chosen at run
//! time. All compute Pillow's exact integer arithmetic (u8 sample x 22-bit i32 weight, summed in
//! i32 from a half-unit bias, shifted and clamped), so every version gives the same bytes; the
//! SIMD ones only do several channels or pixels per instruction. (Pillow-SIMD's 16-bit weights
//! would be faster but are not Pillow's results.)
use super::resize::PRECISION_BITS;

const BIAS: i32 = 1 << (PRECISION_BITS - 1);

#[inline]
fn clip8(v: i32) -> u8 {
    (v >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Weights of one pass: output `i` reads `bounds[i].1` inputs from `bounds[i].0` with weights
/// `kk[i * ksize ..]`.
pub struct Taps<'a> {
    pub ksize: usize,
    pub bounds: &'a [(usize, usize)],
    pub kk: &'a [i32],
}

impl Taps<'_> {
    #[inline]
    fn get(&self, i: usize) -> (usize, &[i32]) {
        let (first, n) = self.bounds[i];
        (first, &self.kk[i * self.ksize..i * self.ksize + n])
    }
}

/// The weights of a horizontal pass rearranged for `x86::horizontal_avx2`, when it applies.
pub struct Packed {
    #[cfg(target_arch = "x86_64")]
    inner: Option<x86::PackedTaps>,
}

impl Packed {
    pub fn new(taps: &Taps<'_>, channels: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let ok =
                (channels == 3 || channels == 4) && std::arch::is_x86_feature_detected!("avx2");
            Self {
                inner: ok.then(|| x86::PackedTaps::new(taps)),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (taps, channels);
            Self {}
        }
    }
}

/// One output row of the horizontal pass: `out` holds `taps.bounds.len()` pixels.
pub fn horizontal(src: &[u8], out: &mut [u8], channels: usize, taps: &Taps<'_>, packed: &Packed) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = &packed.inner {
        // SAFETY: `PackedTaps` exists only where the CPU has AVX2 (see `Packed::new`).
        unsafe { x86::horizontal_avx2(src, out, channels, taps, p) };
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = packed;
    #[cfg(target_arch = "x86_64")]
    if (channels == 3 || channels == 4) && std::arch::is_x86_feature_detected!("sse4.1") {
        // SAFETY: the CPU has SSE4.1 (checked just above).
        unsafe { x86::horizontal_sse41(src, out, channels, taps) };
        return;
    }
    match channels {
        1 => horizontal_scalar::<1>(src, out, taps),
        2 => horizontal_scalar::<2>(src, out, taps),
        3 => horizontal_scalar::<3>(src, out, taps),
        _ => horizontal_scalar::<4>(src, out, taps),
    }
}

fn horizontal_scalar<const C: usize>(src: &[u8], out: &mut [u8], taps: &Taps<'_>) {
    for (xx, px_out) in out.chunks_exact_mut(C).enumerate() {
        let (first, k) = taps.get(xx);
        let px = &src[first * C..(first + k.len()) * C];
        let mut acc = [BIAS; C];
        for (p, &w) in px.chunks_exact(C).zip(k) {
            for c in 0..C {
                acc[c] = acc[c].wrapping_add(i32::from(p[c]).wrapping_mul(w));
            }
        }
        for c in 0..C {
            px_out[c] = clip8(acc[c]);
        }
    }
}

/// One output row of the vertical pass: `rows` is the intermediate image (rows of `stride`
/// bytes), output row `yy` of `taps`.
pub fn vertical(
    rows: &[u8],
    stride: usize,
    yy: usize,
    taps: &Taps<'_>,
    row_offset: usize,
    out: &mut [u8],
) {
    let (first, k) = taps.get(yy);
    if k.is_empty() {
        out.fill(clip8(BIAS));
        return;
    }
    let base = (first - row_offset) * stride;
    // Up to the last byte read: the rows may start mid-row (a window's first column).
    let src = &rows[base..base + (k.len() - 1) * stride + out.len()];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { x86::vertical_avx2(src, stride, k, out) };
        return;
    }
    vertical_scalar(src, stride, k, out);
}

fn vertical_scalar(src: &[u8], stride: usize, k: &[i32], out: &mut [u8]) {
    for (i, px) in out.iter_mut().enumerate() {
        let mut acc = BIAS;
        for (y, &w) in k.iter().enumerate() {
            acc = acc.wrapping_add(i32::from(src[y * stride + i]).wrapping_mul(w));
        }
        *px = clip8(acc);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{clip8, Taps, BIAS};
    use crate::image::resize::PRECISION_BITS;
    #[allow(clippy::wildcard_imports)] // the intrinsics, by their Intel names
    use std::arch::x86_64::*;

    /// Each 22-bit weight split as `hi * 2^11 + lo` (lo in 0..2048), both fitting i16, so that
    /// `_mm256_madd_epi16` gives exact products: sum(p * w) = (sum(p * hi) << 11) + sum(p * lo),
    /// equal modulo 2^32 to Pillow's i32 sum. Per output pixel and group of four taps, two
    /// vectors (hi, lo) laid out [w0 w1 w0 w1 w0 w1 w0 w1 | w2 w3 ...] to meet the pixels'
    /// channel pairs.
    pub struct PackedTaps {
        groups: usize,
        w: Vec<[i16; 16]>,
    }

    const SPLIT: u32 = 11;

    impl PackedTaps {
        pub fn new(taps: &Taps<'_>) -> Self {
            let groups = taps.ksize.div_ceil(4);
            let n_out = taps.bounds.len();
            let mut w = vec![[0i16; 16]; n_out * groups * 2];
            for xx in 0..n_out {
                let (_, k) = taps.get(xx);
                for (t, &kw) in k.iter().enumerate() {
                    let (hi, lo) = ((kw >> SPLIT) as i16, (kw & ((1 << SPLIT) - 1)) as i16);
                    let g = t / 4;
                    let (half, odd) = ((t % 4) / 2, t % 2);
                    let base = (xx * groups + g) * 2;
                    for pair in 0..4 {
                        w[base][half * 8 + pair * 2 + odd] = hi;
                        w[base + 1][half * 8 + pair * 2 + odd] = lo;
                    }
                }
            }
            Self { groups, w }
        }
    }

    /// Byte shuffle: 16 bytes (pixels 0..3) to i16 lanes [c0(p0) c0(p1) c1(p0) c1(p1) ...] in
    /// the low half and the same for pixels 2 and 3 in the high half; 0x80 gives zero.
    fn shuffle_mask(channels: usize) -> [i8; 32] {
        let mut m = [-128i8; 32];
        for half in 0..2 {
            for c in 0..channels.min(4) {
                for odd in 0..2 {
                    let px = half * 2 + odd;
                    m[half * 16 + c * 4 + odd * 2] = (px * channels + c) as i8;
                }
            }
        }
        m
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn horizontal_avx2(
        src: &[u8],
        out: &mut [u8],
        channels: usize,
        taps: &Taps<'_>,
        packed: &PackedTaps,
    ) {
        let n_out = out.len() / channels;
        let m = shuffle_mask(channels);
        // SAFETY: reading 32 bytes from a 32-byte array.
        let mask = unsafe { _mm256_loadu_si256(m.as_ptr().cast()) };
        let bias = _mm_set1_epi32(BIAS);
        // The row in a copy with spare bytes, so that every 16-byte load is in bounds without a
        // branch (weights past a pixel's taps are zero, so the spare bytes never count).
        PADDED.with(|cell| {
            let mut padded = cell.borrow_mut();
            padded.clear();
            padded.extend_from_slice(src);
            padded.resize(src.len() + (packed.groups * 4 + 4) * channels, 0);
            let base = padded.as_ptr();
            let mut w = packed.w.as_ptr();
            for xx in 0..n_out {
                let first = taps.bounds[xx].0;
                let mut acc_hi = _mm256_setzero_si256();
                let mut acc_lo = _mm256_setzero_si256();
                let mut at = first * channels;
                // Every group, even past this pixel's taps: their weights are zero and the row
                // copy is padded for the reads, so the loop has no branch.
                for _ in 0..packed.groups {
                    // SAFETY: `at + 16 <= padded.len()` by the padding below; `w` stays inside
                    // `packed.w`, which holds `groups * 2` entries per output pixel.
                    unsafe {
                        let bytes = _mm_loadu_si128(base.add(at).cast());
                        let px = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), mask);
                        let wh = _mm256_loadu_si256((*w).as_ptr().cast());
                        let wl = _mm256_loadu_si256((*w.add(1)).as_ptr().cast());
                        acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(px, wh));
                        acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(px, wl));
                        w = w.add(2);
                    }
                    at += 4 * channels;
                }
                let sum = _mm256_add_epi32(_mm256_slli_epi32::<{ SPLIT as i32 }>(acc_hi), acc_lo);
                let v = _mm_add_epi32(
                    _mm_add_epi32(
                        _mm256_castsi256_si128(sum),
                        _mm256_extracti128_si256::<1>(sum),
                    ),
                    bias,
                );
                let v = _mm_srai_epi32::<{ PRECISION_BITS as i32 }>(v);
                let v = _mm_packus_epi16(_mm_packs_epi32(v, v), _mm_setzero_si128());
                let word = _mm_cvtsi128_si32(v) as u32;
                let at = xx * channels;
                if at + 4 <= out.len() {
                    // SAFETY: in bounds (checked); for 3 channels the fourth byte is the next
                    // pixel's, rewritten by the next iteration.
                    unsafe { out.as_mut_ptr().add(at).cast::<u32>().write_unaligned(word) };
                } else {
                    out[at..at + channels].copy_from_slice(&word.to_le_bytes()[..channels]);
                }
            }
        });
    }

    thread_local! {
        static PADDED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// All channels of a pixel in one i32x4: per tap, widen the pixel's bytes, multiply by the
    /// broadcast weight, add. (_mm_mullo_epi32 keeps Pillow's full 32-bit products.)
    #[target_feature(enable = "sse4.1")]
    pub unsafe fn horizontal_sse41(src: &[u8], out: &mut [u8], channels: usize, taps: &Taps<'_>) {
        let n_out = out.len() / channels;
        for xx in 0..n_out {
            let (first, k) = taps.get(xx);
            let mut acc = _mm_set1_epi32(BIAS);
            let start = first * channels;
            for (t, &w) in k.iter().enumerate() {
                let at = start + t * channels;
                // Four bytes are read; for 3 channels the fourth belongs to the next pixel (or,
                // at the row's end, comes from a copy) and its lane is never stored.
                let word = if at + 4 <= src.len() {
                    // SAFETY: in bounds (checked).
                    unsafe { src.as_ptr().add(at).cast::<u32>().read_unaligned() }
                } else {
                    let mut b = [0u8; 4];
                    b[..channels].copy_from_slice(&src[at..at + channels]);
                    u32::from_le_bytes(b)
                };
                let p = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(word as i32));
                acc = _mm_add_epi32(acc, _mm_mullo_epi32(p, _mm_set1_epi32(w)));
            }
            let v = _mm_srai_epi32::<{ PRECISION_BITS as i32 }>(acc);
            let v = _mm_packus_epi16(_mm_packs_epi32(v, v), _mm_setzero_si128());
            let bytes = (_mm_cvtsi128_si32(v) as u32).to_le_bytes();
            out[xx * channels..(xx + 1) * channels].copy_from_slice(&bytes[..channels]);
        }
    }

    /// Eight outputs per step: widen 8 bytes of each tap's row to i32x8, multiply-add, then
    /// shift and pack with saturation (= Pillow's clip8).
    #[target_feature(enable = "avx2")]
    pub unsafe fn vertical_avx2(src: &[u8], stride: usize, k: &[i32], out: &mut [u8]) {
        let len = out.len();
        let mut i = 0;
        while i + 16 <= len {
            let mut a0 = _mm256_set1_epi32(BIAS);
            let mut a1 = _mm256_set1_epi32(BIAS);
            for (y, &w) in k.iter().enumerate() {
                // SAFETY: `src` holds (k.len() - 1) * stride + out.len() bytes and
                // i + 16 <= out.len().
                let b = unsafe { _mm_loadu_si128(src.as_ptr().add(y * stride + i).cast()) };
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
            for (y, &w) in k.iter().enumerate() {
                acc = acc.wrapping_add(i32::from(src[y * stride + j]).wrapping_mul(w));
            }
            *px = clip8(acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SIMD kernels against the portable ones on random rows and extreme weights.
    #[test]
    fn simd_equals_scalar() {
        let mut seed = 12345u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for channels in [3usize, 4] {
            for n_in in [1usize, 2, 5, 17, 64] {
                let src: Vec<u8> = (0..n_in * channels).map(|_| rnd() as u8).collect();
                let ksize = 7;
                let n_out = 9;
                let mut bounds = Vec::new();
                let mut kk = vec![0i32; n_out * ksize];
                for o in 0..n_out {
                    let first = (rnd() as usize) % n_in;
                    let n = 1 + (rnd() as usize) % ksize.min(n_in - first);
                    bounds.push((first, n));
                    for t in 0..n {
                        kk[o * ksize + t] = (rnd() as i32) >> 8; // up to +-2^23: overflow paths too
                    }
                }
                let taps = Taps {
                    ksize,
                    bounds: &bounds,
                    kk: &kk,
                };
                let mut a = vec![0u8; n_out * channels];
                let mut b = vec![0u8; n_out * channels];
                horizontal(&src, &mut a, channels, &taps, &Packed::new(&taps, channels));
                let mut c = vec![0u8; n_out * channels];
                horizontal(
                    &src,
                    &mut c,
                    channels,
                    &taps,
                    &Packed {
                        #[cfg(target_arch = "x86_64")]
                        inner: None,
                    },
                );
                assert_eq!(c, a, "SSE4.1 vs AVX2, {channels} channels");
                match channels {
                    3 => horizontal_scalar::<3>(&src, &mut b, &taps),
                    _ => horizontal_scalar::<4>(&src, &mut b, &taps),
                }
                assert_eq!(a, b, "horizontal, {channels} channels, {n_in} inputs");
            }
        }
        for width in [1usize, 15, 16, 17, 40, 100] {
            let rows = 6;
            let src: Vec<u8> = (0..width * rows).map(|_| rnd() as u8).collect();
            let kk: Vec<i32> = (0..rows).map(|_| (rnd() as i32) >> 9).collect();
            let bounds = [(0usize, rows)];
            let taps = Taps {
                ksize: rows,
                bounds: &bounds,
                kk: &kk,
            };
            let mut a = vec![0u8; width];
            let mut b = vec![0u8; width];
            vertical(&src, width, 0, &taps, 0, &mut a);
            vertical_scalar(&src, width, &kk, &mut b);
            assert_eq!(a, b, "vertical, width {width}");
        }
    }
}
