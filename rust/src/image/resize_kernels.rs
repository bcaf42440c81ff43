//! The inner loops of the resize passes: portable versions, and x86 SIMD versions chosen at run
//! time (AVX2 in `resize_avx2`; SSE4.1 here for the horizontal pass of CPUs without AVX2). All
//! compute Pillow's exact integer arithmetic (u8 sample x 22-bit i32 weight, summed in i32 from
//! a half-unit bias, shifted and clamped), so every version gives the same bytes. (Pillow-SIMD's
//! 16-bit weights would be faster but are not Pillow's results.)
use super::resize::PRECISION_BITS;
#[cfg(target_arch = "x86_64")]
use super::resize_avx2::{self as avx2, HorizontalTable};

pub(super) const BIAS: i32 = 1 << (PRECISION_BITS - 1);

#[inline]
pub(super) fn clip8(v: i32) -> u8 {
    (v >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Weights of one pass: output `i` reads `bounds[i].1` inputs from `bounds[i].0` with weights
/// `kk[i * ksize ..]`.
#[derive(Clone, Copy)]
pub struct Taps<'a> {
    pub ksize: usize,
    pub bounds: &'a [(usize, usize)],
    pub kk: &'a [i32],
}

impl Taps<'_> {
    #[inline]
    pub(super) fn get(&self, i: usize) -> (usize, &[i32]) {
        let (first, n) = self.bounds[i];
        (first, &self.kk[i * self.ksize..i * self.ksize + n])
    }
}

/// A horizontal pass prepared for this CPU: rows of `row_len` bytes to rows of
/// `taps.bounds.len()` pixels.
pub struct Horizontal<'a> {
    taps: Taps<'a>,
    channels: usize,
    #[cfg(target_arch = "x86_64")]
    avx2: Option<HorizontalTable>,
}

impl<'a> Horizontal<'a> {
    pub fn new(taps: Taps<'a>, channels: usize, row_len: usize) -> Self {
        Self {
            taps,
            channels,
            #[cfg(target_arch = "x86_64")]
            avx2: HorizontalTable::new(&taps, channels, row_len),
        }
    }

    /// Whether `row_pair` is faster than two `row`s.
    pub fn wants_row_pairs(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = &self.avx2 {
            return t.wants_row_pairs();
        }
        false
    }

    /// One output row from one input row.
    pub fn row(&self, src: &[u8], out: &mut [u8]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = &self.avx2 {
            t.rows([src], [out]);
            return;
        }
        horizontal_portable(src, out, self.channels, &self.taps);
    }

    /// Two rows with the same weights.
    pub fn row_pair(&self, src: [&[u8]; 2], out: [&mut [u8]; 2]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = &self.avx2 {
            t.rows(src, out);
            return;
        }
        let [o0, o1] = out;
        horizontal_portable(src[0], o0, self.channels, &self.taps);
        horizontal_portable(src[1], o1, self.channels, &self.taps);
    }
}

/// The horizontal pass without AVX2: SSE4.1 for RGB and RGBA where the CPU has it, else scalar.
fn horizontal_portable(src: &[u8], out: &mut [u8], channels: usize, taps: &Taps<'_>) {
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

/// One output row of the vertical pass: tap `y` (weight `k[y]`) reads the bytes of `src` from
/// `offs[y]` on (rows of the intermediate image, or of a ring of them).
pub fn vertical(src: &[u8], offs: &[usize], k: &[i32], out: &mut [u8]) {
    assert_eq!(offs.len(), k.len());
    if k.is_empty() {
        out.fill(clip8(BIAS));
        return;
    }
    assert!(
        offs.iter().all(|&o| o + out.len() <= src.len()),
        "vertical taps outside the rows"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above); every tap's bytes are in `src`
        // (asserted above).
        unsafe { avx2::vertical(src, offs, k, out) };
        return;
    }
    vertical_scalar(src, offs, k, out);
}

fn vertical_scalar(src: &[u8], offs: &[usize], k: &[i32], out: &mut [u8]) {
    for (i, px) in out.iter_mut().enumerate() {
        let mut acc = BIAS;
        for (&o, &w) in offs.iter().zip(k) {
            acc = acc.wrapping_add(i32::from(src[o + i]).wrapping_mul(w));
        }
        *px = clip8(acc);
    }
}

/// Pillow's RGBA -> RGBa of `src` into `dst` (same length): each colour times alpha / 255,
/// rounded (`MULDIV255`).
pub fn premultiply(src: &[u8], dst: &mut [u8]) {
    assert_eq!(src.len(), dst.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { avx2::premultiply(src, dst) };
        return;
    }
    premultiply_scalar(src, dst);
}

pub(super) fn premultiply_scalar(src: &[u8], dst: &mut [u8]) {
    for (s, d) in src.chunks_exact(4).zip(dst.chunks_exact_mut(4)) {
        let a = u32::from(s[3]);
        for c in 0..3 {
            let t = u32::from(s[c]) * a + 128;
            d[c] = (((t >> 8) + t) >> 8) as u8;
        }
        d[3] = s[3];
    }
}

/// Pillow's RGBa -> RGBA: colours times 255 / alpha, truncated and clipped; alpha 0 and 255 are
/// left as they are.
pub fn unpremultiply(px: &mut [u8]) {
    for p in px.chunks_exact_mut(4) {
        let a = u32::from(p[3]);
        if a != 0 && a != 255 {
            for v in &mut p[..3] {
                *v = ((255 * u32::from(*v)) / a).min(255) as u8;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Taps, BIAS};
    use crate::image::resize::PRECISION_BITS;
    #[allow(clippy::wildcard_imports)] // the intrinsics, by their Intel names
    use std::arch::x86_64::*;

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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Random taps over `n_in` inputs: monotone windows like Pillow's (or not, with `shuffled`),
    /// weights of up to +-2^23 (sums that overflow i32 too).
    fn random_taps(
        rnd: &mut impl FnMut() -> u64,
        n_in: usize,
        n_out: usize,
        ksize: usize,
        shuffled: bool,
    ) -> (Vec<(usize, usize)>, Vec<i32>) {
        let mut bounds = Vec::new();
        let mut kk = vec![0i32; n_out * ksize];
        for o in 0..n_out {
            let first = if shuffled {
                (rnd() as usize) % n_in
            } else {
                (o * n_in / n_out).min(n_in - 1)
            };
            let n = 1 + (rnd() as usize) % ksize.min(n_in - first);
            bounds.push((first, n));
            for t in 0..n {
                kk[o * ksize + t] = (rnd() as i32) >> 8;
            }
        }
        (bounds, kk)
    }

    fn scalar(src: &[u8], out: &mut [u8], channels: usize, taps: &Taps<'_>) {
        match channels {
            1 => horizontal_scalar::<1>(src, out, taps),
            3 => horizontal_scalar::<3>(src, out, taps),
            _ => horizontal_scalar::<4>(src, out, taps),
        }
    }

    /// The prepared horizontal pass (AVX2 where the CPU has it), one row and two at a time,
    /// and SSE4.1, against the scalar loop, on random sizes and tap counts.
    #[test]
    fn horizontal_simd_equals_scalar() {
        let mut rnd = rng(12345);
        for channels in [1usize, 3, 4] {
            for n_in in [1usize, 2, 5, 17, 64, 200] {
                for ksize in [1usize, 2, 3, 7, 9, 12, 19, 40] {
                    for n_out in [1usize, 2, 3, 5, 8, 9, 31, 70] {
                        let shuffled = rnd() % 3 == 0;
                        let (bounds, kk) = random_taps(&mut rnd, n_in, n_out, ksize, shuffled);
                        let taps = Taps {
                            ksize,
                            bounds: &bounds,
                            kk: &kk,
                        };
                        let len = n_in * channels;
                        let rows: Vec<Vec<u8>> = (0..2)
                            .map(|_| (0..len).map(|_| rnd() as u8).collect())
                            .collect();
                        let h = Horizontal::new(taps, channels, len);
                        let mut want = vec![vec![0u8; n_out * channels]; 2];
                        for (r, w) in rows.iter().zip(&mut want) {
                            scalar(r, w, channels, &taps);
                        }
                        let mut got = vec![0u8; n_out * channels];
                        h.row(&rows[0], &mut got);
                        let case = format!("{channels} ch, {n_in} in, {n_out} out, ksize {ksize}");
                        assert_eq!(got, want[0], "row, {case}");
                        let (mut a, mut b) = (vec![0u8; got.len()], vec![0u8; got.len()]);
                        h.row_pair([&rows[0], &rows[1]], [&mut a, &mut b]);
                        assert_eq!((a, b), (want[0].clone(), want[1].clone()), "pair, {case}");
                        let mut portable = vec![0u8; got.len()];
                        horizontal_portable(&rows[0], &mut portable, channels, &taps);
                        assert_eq!(portable, want[0], "portable, {case}");
                    }
                }
            }
        }
    }

    /// The split `w = hi * 2^11 + lo` at its limits: the largest and smallest weights whose
    /// `hi` fits i16, with all-255 and mixed samples; beyond them the table is refused and the
    /// portable path runs.
    #[test]
    fn horizontal_weight_extremes() {
        let limits = [
            (i32::from(i16::MAX) << 11) + 2047,
            i32::from(i16::MIN) << 11,
            1 << 22,
            -(1 << 22),
            2047,
            -1,
            i32::MAX,
            i32::MIN,
        ];
        for channels in [1usize, 3, 4] {
            for &w in &limits {
                for fill in [255u8, 0, 128] {
                    let n_in = 40;
                    let src: Vec<u8> = (0..n_in * channels)
                        .map(|i| if i % 3 == 0 { fill } else { 255 })
                        .collect();
                    let ksize = 9;
                    let bounds: Vec<(usize, usize)> = (0..20).map(|o| (o, ksize)).collect();
                    let kk = vec![w; 20 * ksize];
                    let taps = Taps {
                        ksize,
                        bounds: &bounds,
                        kk: &kk,
                    };
                    let mut want = vec![0u8; 20 * channels];
                    scalar(&src, &mut want, channels, &taps);
                    let mut got = vec![0u8; want.len()];
                    Horizontal::new(taps, channels, src.len()).row(&src, &mut got);
                    assert_eq!(got, want, "{channels} ch, weight {w}, fill {fill}");
                }
            }
        }
    }

    #[test]
    fn vertical_simd_equals_scalar() {
        let mut rnd = rng(777);
        for width in [1usize, 15, 16, 17, 40, 100] {
            let rows = 6;
            let src: Vec<u8> = (0..width * rows).map(|_| rnd() as u8).collect();
            let kk: Vec<i32> = (0..rows).map(|_| (rnd() as i32) >> 9).collect();
            // Rows in any order (a ring buffer wraps around).
            let offs: Vec<usize> = (0..rows).map(|y| ((y + 2) % rows) * width).collect();
            let mut a = vec![0u8; width];
            let mut b = vec![0u8; width];
            vertical(&src, &offs, &kk, &mut a);
            vertical_scalar(&src, &offs, &kk, &mut b);
            assert_eq!(a, b, "vertical, width {width}");
        }
    }

    /// Every (colour, alpha) pair through the vectorised premultiplication.
    #[test]
    fn premultiply_exhaustive() {
        let mut src = Vec::with_capacity(256 * 256 * 4 + 12);
        for a in 0..=255u8 {
            for v in 0..=255u8 {
                src.extend_from_slice(&[v, 255 - v, v / 2, a]);
            }
        }
        src.extend_from_slice(&[1, 2, 3, 4, 200, 100, 50, 128, 9, 9, 9, 9]);
        let mut a = vec![0u8; src.len()];
        let mut b = vec![0u8; src.len()];
        premultiply(&src, &mut a);
        premultiply_scalar(&src, &mut b);
        assert_eq!(a, b);
    }
}
