//! Every byte mask the cl100k-family splitters read off a 64-byte block, from one pass over its
//! bytes (bit i: byte i).
//!
//! Why one pass: a pass per mask would load each block four times (ASCII classes, continuation
//! bytes, CJK lead bytes, the bytes `startmap` tests one by one), and the per-block masks were
//! measured at a third of the split that way. With AVX2 (detected at run time; SSE2 is the x86_64 baseline) a mask is
//! one compare and one movemask per 32 bytes instead of per 16.

/// The masks of one block. Non-ASCII bytes are in none of the ASCII classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ByteMasks {
    /// `[A-Za-z]`.
    pub l: u64,
    /// `[0-9]`.
    pub n: u64,
    /// `[\t\n\v\f\r ]`.
    pub s: u64,
    /// Bytes >= 0x80.
    pub na: u64,
    /// UTF-8 continuation bytes (10xxxxxx).
    pub cont: u64,
    /// Bytes >= 0xE0 (lead bytes of three- and four-byte chars).
    pub ge_e0: u64,
    /// Bytes >= 0xF0 (lead bytes of four-byte chars).
    pub ge_f0: u64,
    /// Lead bytes E5-E9 and EB-EC (see `fastsplit::LETTER_LEADS`).
    pub han: u64,
    /// `\r` or `\n`.
    pub nl: u64,
    /// `' '`.
    pub sp: u64,
    /// `'`.
    pub ap: u64,
}

impl ByteMasks {
    /// Every mask shifted down by `k` bits (a short last block read from further back).
    #[inline]
    pub(super) fn shifted(self, k: usize) -> Self {
        Self {
            l: self.l >> k,
            n: self.n >> k,
            s: self.s >> k,
            na: self.na >> k,
            cont: self.cont >> k,
            ge_e0: self.ge_e0 >> k,
            ge_f0: self.ge_f0 >> k,
            han: self.han >> k,
            nl: self.nl >> k,
            sp: self.sp >> k,
            ap: self.ap >> k,
        }
    }
}

/// Which implementation `masks` runs, chosen once per text (`Kernel::detect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    #[inline]
    pub(super) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Self::Avx2;
        }
        Self::Portable
    }

    /// The masks of `block`.
    #[allow(clippy::inline_always)] // once per block, on the splitters' hottest path
    #[inline(always)]
    pub(super) fn masks(self, block: &[u8; 64]) -> ByteMasks {
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Avx2` is only made by `detect` on a CPU with AVX2; 64 readable bytes.
            Self::Avx2 => unsafe { masks_avx2(block.as_ptr()) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of the x86_64 baseline; 64 readable bytes.
            Self::Portable => unsafe { masks_sse2(block.as_ptr()) },
            #[cfg(not(target_arch = "x86_64"))]
            Self::Portable => masks_scalar(block),
        }
    }
}

/// The masks one byte is in, as bits in `ByteMasks`' field order (the scalar reference).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn byte_bits(c: u8) -> [bool; 11] {
    [
        c.is_ascii_alphabetic(),
        c.is_ascii_digit(),
        matches!(c, b'\t'..=b'\r' | b' '),
        c >= 0x80,
        c & 0xC0 == 0x80,
        c >= 0xE0,
        c >= 0xF0,
        matches!(c, 0xE5..=0xE9 | 0xEB..=0xEC),
        matches!(c, b'\r' | b'\n'),
        c == b' ',
        c == b'\'',
    ]
}

#[cfg(any(test, not(target_arch = "x86_64")))]
fn masks_scalar(block: &[u8; 64]) -> ByteMasks {
    let mut m = [0u64; 11];
    for (i, &c) in block.iter().enumerate() {
        for (mask, on) in m.iter_mut().zip(byte_bits(c)) {
            *mask |= u64::from(on) << i;
        }
    }
    let [l, n, s, na, cont, ge_e0, ge_f0, han, nl, sp, ap] = m;
    ByteMasks {
        l,
        n,
        s,
        na,
        cont,
        ge_e0,
        ge_f0,
        han,
        nl,
        sp,
        ap,
    }
}

/// One lane-width's compares, written once for both kernels (macros, not closures: a closure
/// does not take on its function's `target_feature`, and its intrinsics would be calls).
#[cfg(target_arch = "x86_64")]
macro_rules! masks_body {
    ($p:expr, $lanes:literal, $load:ident, $set1:ident, $cmpeq:ident, $min:ident, $max:ident,
     $sub:ident, $or:ident, $and:ident, $movemask:ident, $bits:ty) => {{
        let mut m = ByteMasks::default();
        for k in 0..64 / $lanes {
            let v = $load($p.add($lanes * k).cast());
            macro_rules! splat {
                ($c:expr) => {
                    $set1($c as i8)
                };
            }
            macro_rules! eq {
                ($c:expr) => {
                    $cmpeq(v, splat!($c))
                };
            }
            // `x <= n` unsigned, per byte, as `min(x, n) == x`; subtracting a range's start
            // first turns a range test into one such compare (bytes below it wrap to large
            // values).
            macro_rules! range {
                ($x:expr, $lo:expr, $n:expr) => {{
                    let d = $sub($x, splat!($lo));
                    $cmpeq($min(d, splat!($n)), d)
                }};
            }
            macro_rules! at_least {
                ($lo:expr) => {
                    $cmpeq($max(v, splat!($lo)), v)
                };
            }
            macro_rules! bit {
                ($x:expr) => {
                    u64::from($movemask($x) as $bits) << ($lanes * k)
                };
            }
            let sp = eq!(b' ');
            m.l |= bit!(range!($or(v, splat!(0x20)), b'a', 25));
            m.n |= bit!(range!(v, b'0', 9));
            m.s |= bit!($or(range!(v, 9, 4), sp));
            m.na |= bit!(v);
            m.cont |= bit!($cmpeq($and(v, splat!(0xC0u8)), splat!(0x80u8)));
            m.ge_e0 |= bit!(at_least!(0xE0u8));
            m.ge_f0 |= bit!(at_least!(0xF0u8));
            m.han |= bit!($or(range!(v, 0xE5u8, 4), range!(v, 0xEBu8, 1)));
            m.nl |= bit!($or(eq!(b'\r'), eq!(b'\n')));
            m.sp |= bit!(sp);
            m.ap |= bit!(eq!(b'\''));
        }
        m
    }};
}

/// # Safety
/// 64 readable bytes at `p`.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn masks_sse2(p: *const u8) -> ByteMasks {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_min_epu8,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_sub_epi8,
    };
    // SAFETY: the caller's 64 bytes; SSE2 is baseline.
    unsafe {
        masks_body!(
            p,
            16,
            _mm_loadu_si128,
            _mm_set1_epi8,
            _mm_cmpeq_epi8,
            _mm_min_epu8,
            _mm_max_epu8,
            _mm_sub_epi8,
            _mm_or_si128,
            _mm_and_si128,
            _mm_movemask_epi8,
            u16
        )
    }
}

/// # Safety
/// 64 readable bytes at `p`, and a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn masks_avx2(p: *const u8) -> ByteMasks {
    use std::arch::x86_64::{
        _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm256_sub_epi8,
    };
    // SAFETY: the caller's 64 bytes and AVX2.
    unsafe {
        masks_body!(
            p,
            32,
            _mm256_loadu_si256,
            _mm256_set1_epi8,
            _mm256_cmpeq_epi8,
            _mm256_min_epu8,
            _mm256_max_epu8,
            _mm256_sub_epi8,
            _mm256_or_si256,
            _mm256_and_si256,
            _mm256_movemask_epi8,
            u32
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel this CPU runs gives the scalar masks, for every byte value at every place.
    #[test]
    fn kernels_match_the_scalar_masks() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(256 * 67).collect();
        let mut kernels = vec![Kernel::Portable];
        if Kernel::detect() != Kernel::Portable {
            kernels.push(Kernel::detect());
        }
        for start in 0..bytes.len() - 64 {
            let block: &[u8; 64] = bytes[start..start + 64].try_into().unwrap();
            for &k in &kernels {
                assert_eq!(k.masks(block), masks_scalar(block), "{k:?} at {start}");
            }
        }
    }
}
