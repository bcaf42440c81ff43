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

/// 32 values of `width` bits, least significant bit first (4 * width bytes), through 32-bit
/// words: no branch a value (the byte-at-a-time form took ~5 ns an id).
fn pack32(values: &[u32], width: u32, out: &mut Vec<u8>) {
    debug_assert_eq!(values.len(), MINI);
    if width == 0 {
        return;
    }
    let mut words = [0u32; MINI + 1];
    for (i, &v) in values.iter().enumerate() {
        let bit = i as u32 * width;
        let (word, shift) = ((bit / 32) as usize, bit % 32);
        words[word] |= v << shift;
        // The high bits that spill into the next word (a shift by 32 would overflow: 64-bit).
        words[word + 1] |= (u64::from(v) >> (32 - shift)) as u32;
    }
    for w in &words[..width as usize] {
        out.extend_from_slice(&w.to_le_bytes());
    }
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
}
