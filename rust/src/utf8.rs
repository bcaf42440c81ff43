//! UTF-8 validation 16 bytes at a time, for the jobs' line reader (`records::line_text`).
//!
//! `std::str::from_utf8` checks non-ASCII text one character at a time: on a multilingual JSONL
//! corpus it was 6% of the tokenize job's tokenizing threads (27 ms per 20 MB), work that
//! `count_tokens` on Python strs does not do. This is the "lookup" algorithm of simdjson and
//! simdutf8 (Keiser & Lemire, "Validating UTF-8 in less than one instruction per byte", 2021)
//! on SSSE3, which every x86-64 CPU of the last 15 years has; elsewhere std's validator runs.
//! The tests compare it with std on every sequence of up to three bytes, at and across a block
//! boundary, on four-byte sequences, and on random mutations of real text.

/// `bytes` as a str when they are valid UTF-8 (the same answer as `std::str::from_utf8(..).ok()`).
#[must_use]
pub fn from_utf8(bytes: &[u8]) -> Option<&str> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3, which `valid` is compiled for.
            if !unsafe { x86::valid(bytes) } {
                return None;
            }
            // SAFETY: `valid` accepts exactly the valid UTF-8 (see the tests).
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
    }
    std::str::from_utf8(bytes).ok()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, _mm_alignr_epi8, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setr_epi8, _mm_setzero_si128,
        _mm_shuffle_epi8, _mm_srli_epi16, _mm_subs_epu8, _mm_xor_si128,
    };

    // Each bit is one kind of error of two consecutive bytes; a pair is in error when the three
    // tables (first byte's high nibble, its low nibble, second byte's high nibble) share a bit.
    const TOO_SHORT: u8 = 1 << 0; // a lead byte, then no continuation
    const TOO_LONG: u8 = 1 << 1; // ASCII, then a continuation
    const OVERLONG_3: u8 = 1 << 2; // E0 80..9F
    const TOO_LARGE: u8 = 1 << 3; // F4 90..BF, F5..FF then a continuation
    const SURROGATE: u8 = 1 << 4; // ED A0..BF
    const OVERLONG_2: u8 = 1 << 5; // C0, C1 then a continuation
    const TOO_LARGE_1000: u8 = 1 << 6; // F5..FF 80..8F
    const OVERLONG_4: u8 = 1 << 6; // F0 80..8F
    const TWO_CONTS: u8 = 1 << 7; // two continuations (an error unless a 3-4 byte lead needs them)
    const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;

    const BYTE_1_HIGH: [u8; 16] = [
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
    ];
    const BYTE_1_LOW: [u8; 16] = [
        CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
        CARRY | OVERLONG_2,
        CARRY,
        CARRY,
        CARRY | TOO_LARGE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
    ];
    const BYTE_2_HIGH: [u8; 16] = [
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
    ];

    struct State {
        prev: __m128i,
        incomplete: __m128i,
        error: __m128i,
        tables: [__m128i; 3],
    }

    #[target_feature(enable = "ssse3")]
    fn load(table: &[u8; 16]) -> __m128i {
        // SAFETY: 16 readable bytes; loadu has no alignment requirement.
        unsafe { _mm_loadu_si128(table.as_ptr().cast()) }
    }

    #[target_feature(enable = "ssse3")]
    fn high_nibbles(v: __m128i) -> __m128i {
        _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F))
    }

    /// Checks one 16-byte block, given the block before it in `s.prev`.
    #[target_feature(enable = "ssse3")]
    fn step(s: &mut State, input: __m128i) {
        if _mm_movemask_epi8(input) == 0 {
            // ASCII: only a sequence the previous block left unfinished is an error.
            s.error = _mm_or_si128(s.error, s.incomplete);
            s.incomplete = _mm_setzero_si128();
            s.prev = input;
            return;
        }
        let prev1 = _mm_alignr_epi8(input, s.prev, 15);
        let [t1h, t1l, t2h] = s.tables;
        let special = _mm_and_si128(
            _mm_and_si128(
                _mm_shuffle_epi8(t1h, high_nibbles(prev1)),
                _mm_shuffle_epi8(t1l, _mm_and_si128(prev1, _mm_set1_epi8(0x0F))),
            ),
            _mm_shuffle_epi8(t2h, high_nibbles(input)),
        );
        // Where the byte two back is E0.. or three back F0..: a continuation must be here.
        let prev2 = _mm_alignr_epi8(input, s.prev, 14);
        let prev3 = _mm_alignr_epi8(input, s.prev, 13);
        let third = _mm_subs_epu8(prev2, _mm_set1_epi8((0xE0u8 - 0x80) as i8));
        let fourth = _mm_subs_epu8(prev3, _mm_set1_epi8((0xF0u8 - 0x80) as i8));
        let must_continue = _mm_and_si128(_mm_or_si128(third, fourth), _mm_set1_epi8(0x80u8 as i8));
        s.error = _mm_or_si128(s.error, _mm_xor_si128(must_continue, special));
        // A lead byte among the last three that its sequence cannot fit after.
        let max = _mm_setr_epi8(
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            -1,
            (0xF0u8 - 1) as i8,
            (0xE0u8 - 1) as i8,
            (0xC0u8 - 1) as i8,
        );
        s.incomplete = _mm_subs_epu8(input, max);
        s.prev = input;
    }

    /// Whether `bytes` are valid UTF-8.
    #[target_feature(enable = "ssse3")]
    pub(super) fn valid(bytes: &[u8]) -> bool {
        let mut s = State {
            prev: _mm_setzero_si128(),
            incomplete: _mm_setzero_si128(),
            error: _mm_setzero_si128(),
            tables: [load(&BYTE_1_HIGH), load(&BYTE_1_LOW), load(&BYTE_2_HIGH)],
        };
        let mut blocks = bytes.chunks_exact(16);
        for block in &mut blocks {
            // SAFETY: a 16-byte block; loadu has no alignment requirement.
            step(&mut s, unsafe { _mm_loadu_si128(block.as_ptr().cast()) });
        }
        let rest = blocks.remainder();
        if !rest.is_empty() {
            // Zeros (ASCII) after the last bytes: a sequence cut short there is TOO_SHORT.
            let mut last = [0u8; 16];
            last[..rest.len()].copy_from_slice(rest);
            step(&mut s, load(&last));
        }
        let error = _mm_or_si128(s.error, s.incomplete);
        _mm_movemask_epi8(_mm_cmpeq_epi8(error, _mm_setzero_si128())) == 0xFFFF
    }
}

#[cfg(test)]
mod tests {
    use super::from_utf8;

    fn check(bytes: &[u8]) {
        assert_eq!(
            from_utf8(bytes).is_some(),
            std::str::from_utf8(bytes).is_ok(),
            "{bytes:02x?}"
        );
    }

    /// `seq` alone, after ASCII so that it ends a block, and straddling a block boundary.
    fn check_placed(seq: &[u8]) {
        let mut buf = [b'a'; 40];
        check(seq);
        for at in [0, 13, 14, 15, 16, 30] {
            let end = at + seq.len();
            buf[at..end].copy_from_slice(seq);
            check(&buf[..end]);
            check(&buf[..=end]);
            check(&buf);
            buf[at..end].fill(b'a');
        }
    }

    #[test]
    fn every_sequence_of_up_to_three_bytes() {
        for a in 0..=255u8 {
            check_placed(&[a]);
            for b in 0..=255u8 {
                check_placed(&[a, b]);
                // Third bytes: every value after lead bytes (the only firsts where it matters),
                // and the class edges otherwise.
                let thirds: &[u8] = if a >= 0xC0 {
                    &[
                        0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xE0, 0xF0, 0xFF,
                    ]
                } else {
                    &[0x00, 0x80, 0xBF, 0xC0]
                };
                for &c in thirds {
                    check_placed(&[a, b, c]);
                }
            }
        }
        for a in 0xE0..=0xEFu8 {
            for b in 0x80..=0xBFu8 {
                for c in 0..=255u8 {
                    check(&[a, b, c]);
                    check(&[
                        b'x', b'x', b'x', b'x', b'x', b'x', b'x', b'x', b'x', b'x', b'x', b'x',
                        b'x', b'x', a, b, c,
                    ]);
                }
            }
        }
    }

    #[test]
    fn four_byte_sequences() {
        for a in 0xF0..=0xF8u8 {
            for b in 0x70..=0xC0u8 {
                for c in [0x7F, 0x80, 0xBF, 0xC0] {
                    for d in [0x00, 0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF] {
                        check_placed(&[a, b, c, d]);
                    }
                }
            }
        }
    }

    #[test]
    fn mutated_text() {
        let text = "plain ASCII, Ünïcödé, Кириллица, 中文字符, ☃ and 🙂🙂, עברית, हिन्दी "
            .repeat(4)
            .into_bytes();
        check(&text);
        // A small xorshift generator: the same cases every run.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let start = (next() % text.len() as u64) as usize;
            let len = (next() % 70) as usize;
            let mut piece = text[start..(start + len).min(text.len())].to_vec();
            for _ in 0..(next() % 3) {
                if !piece.is_empty() {
                    let at = (next() % piece.len() as u64) as usize;
                    piece[at] = next() as u8;
                }
            }
            check(&piece);
        }
    }
}
