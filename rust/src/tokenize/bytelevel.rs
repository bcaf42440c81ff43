//! GPT-2's byte-level alphabet: each byte is shown as a printable char, so that a vocabulary of
//! strings can cover arbitrary bytes. The table is the one every byte-level tokenizer.json uses.
use std::sync::LazyLock;

/// `BYTE_CHAR[b]` is the char standing for byte `b`.
pub static BYTE_CHAR: LazyLock<[char; 256]> = LazyLock::new(|| {
    let mut table = ['\0'; 256];
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut n = 0u32;
    for b in 0..=255u8 {
        table[b as usize] = if printable(b) {
            char::from(b)
        } else {
            n += 1;
            char::from_u32(255 + n).expect("valid code point")
        };
    }
    table
});

/// The byte a byte-level char stands for (`None` for chars outside the alphabet). All of them are
/// below U+0144, so a small array answers.
static CHAR_BYTE: LazyLock<[i16; 0x144]> = LazyLock::new(|| {
    let mut table = [-1i16; 0x144];
    for (b, c) in BYTE_CHAR.iter().enumerate() {
        table[*c as usize] = b as i16;
    }
    table
});

#[inline]
#[must_use]
pub fn char_byte(c: char) -> Option<u8> {
    CHAR_BYTE
        .get(c as usize)
        .and_then(|&b| u8::try_from(b).ok())
}

/// The byte-level spelling of `bytes` ("Ġhello" for b" hello").
#[must_use]
pub fn encode_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| BYTE_CHAR[b as usize]).collect()
}

/// The bytes a byte-level token stands for, into `out` (cleared first): whether every char is
/// in the alphabet. A load decodes the whole vocabulary, into one buffer instead of 100k
/// vectors.
pub fn decode_token_into(token: &str, out: &mut Vec<u8>) -> bool {
    out.clear();
    for c in token.chars() {
        match char_byte(c) {
            Some(b) => out.push(b),
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt2_table() {
        assert_eq!(BYTE_CHAR[b' ' as usize], 'Ġ');
        assert_eq!(BYTE_CHAR[b'\n' as usize], 'Ċ');
        assert_eq!(BYTE_CHAR[b'a' as usize], 'a');
        assert_eq!(encode_bytes("€".as_bytes()), "âĤ¬");
        for b in 0..=255u8 {
            assert_eq!(char_byte(BYTE_CHAR[b as usize]), Some(b));
        }
        let mut buf = b"left over".to_vec();
        assert!(decode_token_into("Ġhello", &mut buf));
        assert_eq!(buf, b" hello");
        assert!(!decode_token_into("日", &mut buf));
        assert!(decode_token_into("ĠhiĊ", &mut buf));
        assert_eq!(buf, b" hi\n");
        assert!(!decode_token_into("a日", &mut buf));
    }
}
