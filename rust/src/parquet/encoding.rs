//! Parquet's value and level encodings that token shards use: the RLE/bit-packed hybrid for
//! levels and dictionary indices (only its RLE runs), and DELTA_BINARY_PACKED for token ids.

/// Appends an unsigned LEB128 varint.
pub fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// RLE runs of one-bit levels (or bit-width-1 dictionary indices), merged as they come: a
/// document's levels are two runs (its first token, then the rest), so a page costs a few
/// bytes a document instead of a bit a token written one at a time.
#[derive(Default)]
pub struct Runs {
    out: Vec<u8>,
    value: u8,
    count: u64,
}

impl Runs {
    pub fn push(&mut self, value: u8, count: u64) {
        if count == 0 {
            return;
        }
        if value != self.value && self.count > 0 {
            self.flush();
        }
        self.value = value;
        self.count += count;
    }

    fn flush(&mut self) {
        // An RLE run: header `count << 1` (low bit 0), then the value in one byte.
        uleb(&mut self.out, self.count << 1);
        self.out.push(self.value);
        self.count = 0;
    }

    /// The encoded runs.
    pub fn finish(mut self) -> Vec<u8> {
        if self.count > 0 {
            self.flush();
        }
        self.out
    }
}

const BLOCK: usize = 128;
const MINIBLOCKS: usize = 4;
const MINI: usize = BLOCK / MINIBLOCKS;

/// `values` in DELTA_BINARY_PACKED (blocks of 128 deltas, 4 miniblocks of 32), with the 32-bit
/// wrapping arithmetic of an INT32 column (readers undo it the same way).
///
/// Why this encoding for token ids: consecutive ids are unrelated, but their deltas need ~18
/// bits in a vocabulary of 100-200k tokens, so the ids take ~56% of their plain size for ~1 ns
/// an id, where a general compressor (Snappy) takes ~50% at ~10x the CPU.
pub fn delta_binary_packed(values: &[u32], out: &mut Vec<u8>) {
    uleb(out, BLOCK as u64);
    uleb(out, MINIBLOCKS as u64);
    uleb(out, values.len() as u64);
    let first = values.first().map_or(0, |&v| v as i32);
    uleb(out, zigzag(i64::from(first)));
    let mut deltas = [0i32; BLOCK];
    let mut prev = first as u32;
    let mut i = 1;
    while i < values.len() {
        let n = (values.len() - i).min(BLOCK);
        for (d, &v) in deltas.iter_mut().zip(&values[i..i + n]) {
            *d = v.wrapping_sub(prev) as i32;
            prev = v;
        }
        i += n;
        let min = deltas[..n].iter().copied().min().unwrap_or(0);
        uleb(out, zigzag(i64::from(min)));
        let mut adjusted = [0u32; BLOCK];
        for (a, &d) in adjusted.iter_mut().zip(&deltas[..n]) {
            *a = d.wrapping_sub(min) as u32;
        }
        let widths_at = out.len();
        out.extend_from_slice(&[0; MINIBLOCKS]);
        for m in 0..MINIBLOCKS {
            if m * MINI >= n {
                break; // miniblocks past the last delta are not written (width 0)
            }
            let mini = &adjusted[m * MINI..(m + 1) * MINI]; // zero-padded past `n`
            let width = 32 - mini.iter().fold(0, |a, &v| a | v).leading_zeros();
            out[widths_at + m] = width as u8;
            pack32(mini, width, out);
        }
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// 32 values of `width` bits, least significant bit first (4 * width bytes). One function per
/// width (`pack_w`): with the width a constant, every value's word and shift are constants and
/// the loop unrolls into straight shifts and ORs (the variable-width loop took ~4 ns an id, a
/// third of the job's writing).
fn pack32(values: &[u32], width: u32, out: &mut Vec<u8>) {
    let values: &[u32; MINI] = values.try_into().expect("a miniblock is 32 values");
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                0 => {}
                $($w => pack_w::<$w>(values, out),)*
                _ => unreachable!("a delta has at most 32 bits"),
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

#[inline]
fn pack_w<const W: u32>(values: &[u32; MINI], out: &mut Vec<u8>) {
    // Unrolled by hand (LLVM keeps the loop rolled): with `W` and `i` constants, each value is
    // a shift and an OR or two into words known at compile time.
    let mut words = [0u32; MINI + 1];
    macro_rules! put {
        ($($i:literal)*) => {$(
            let (word, shift) = (($i * W / 32) as usize, $i * W % 32);
            words[word] |= values[$i] << shift;
            if shift + W > 32 {
                words[word + 1] |= values[$i] >> (32 - shift);
            }
        )*};
    }
    put!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    out.extend(words[..W as usize].iter().flat_map(|w| w.to_le_bytes()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_equal_values() {
        let mut r = Runs::default();
        r.push(0, 1);
        r.push(1, 3);
        r.push(1, 2);
        r.push(0, 0);
        r.push(0, 200);
        assert_eq!(r.finish(), vec![2, 0, 10, 1, 0x90, 0x03, 0]);
    }

    #[test]
    fn delta_packs_blocks() {
        let mut out = Vec::new();
        delta_binary_packed(&[7, 5, 9], &mut out);
        // header: 128, 4, 3 values, first 7 (zigzag 14); block: min -2 (zigzag 3), widths
        // [3, 0, 0, 0], deltas -2 and 4 less the min: 0 and 6, padded to 32 values of 3 bits.
        let mut want = vec![0x80, 0x01, 4, 3, 14, 3, 3, 0, 0, 0];
        let mut packed = vec![0u8; 12];
        packed[0] = 6 << 3;
        want.extend(packed);
        assert_eq!(out, want);
    }

    #[test]
    fn pack32_every_width_matches_bit_by_bit() {
        // Each width's unrolled packer against the definition: bit j of value i at bit
        // i * width + j of the output, least significant first.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for width in 1..=32u32 {
            for _ in 0..8 {
                let values: Vec<u32> = (0..MINI)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x as u32) & (u32::MAX >> (32 - width))
                    })
                    .collect();
                let mut out = vec![0xAA];
                pack32(&values, width, &mut out);
                let mut want = vec![0u8; 4 * width as usize];
                for (i, &v) in values.iter().enumerate() {
                    for j in 0..width {
                        if v >> j & 1 == 1 {
                            let bit = i * width as usize + j as usize;
                            want[bit / 8] |= 1 << (bit % 8);
                        }
                    }
                }
                assert_eq!(out[0], 0xAA);
                assert_eq!(out[1..], want[..], "width {width}");
            }
        }
    }
}
