//! HF's UnicodeScripts pre-tokenizer: the text is cut wherever the Unicode script changes, as
//! SentencePiece's Unigram trainer does, with the scripts of HF's own table (see `table`).
use super::pattern::Slices;

mod table;

/// The script of `c` in HF's table (`get_script`): the run it falls in.
fn raw_script(c: char) -> u8 {
    let i = table::STARTS.partition_point(|&s| s <= c as u32) - 1;
    table::SCRIPTS[i]
}

/// HF's `fixed_script`: Japanese kana count as Han (as SentencePiece does), so do U+30FC
/// (the prolonged sound mark, Common in Unicode) and the plain space is `Any` (never a cut).
fn fixed_script(c: char) -> u8 {
    if c == '\u{30FC}' {
        return table::HAN;
    }
    if c == ' ' {
        return table::ANY;
    }
    match raw_script(c) {
        table::HIRAGANA | table::KATAKANA => table::HAN,
        s => s,
    }
}

/// The pieces of `text` as slices for `Behavior::Removed`: each run of one script, with the
/// `Any` chars after it. HF cuts only before a char whose script differs from the last non-Any
/// one, and keeps the text from the first cut on, so `Any` chars that start the text (leading
/// spaces) are dropped, and a text of `Any` chars only gives no piece at all.
pub fn slices(text: &str) -> Slices {
    let mut cuts: Vec<usize> = Vec::new();
    let mut last = table::ANY;
    for (i, c) in text.char_indices() {
        let s = fixed_script(c);
        if s != table::ANY {
            if s != last {
                cuts.push(i);
            }
            last = s;
        }
    }
    let first = cuts.first().copied().unwrap_or(text.len());
    let mut out: Slices = Vec::with_capacity(cuts.len() + 1);
    if first > 0 {
        out.push(((0, first), true));
    }
    cuts.push(text.len());
    out.extend(cuts.windows(2).map(|w| ((w[0], w[1]), false)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<&str> {
        slices(text)
            .into_iter()
            .filter(|&(_, removed)| !removed)
            .map(|((s, e), _)| &text[s..e])
            .collect()
    }

    #[test]
    fn scripts_as_hf() {
        // HF's own tests of get_script and fixed_script.
        for c in ['京', '太', 'い', 'グ', 'ー'] {
            assert_eq!(fixed_script(c), table::HAN, "{c}");
        }
        assert_eq!(raw_script('い'), table::HIRAGANA);
        assert_eq!(raw_script('グ'), table::KATAKANA);
        assert_eq!(raw_script('ー'), raw_script('0'));
        assert_eq!(fixed_script('a'), fixed_script('A'));
        for c in ['$', '@', '-', '\u{FFFD}', ' ', '\u{3000}'] {
            assert_eq!(raw_script(c), raw_script('0'), "{c:?}");
        }
        assert_eq!(fixed_script(' '), table::ANY);
        // Unlisted in HF's Unicode 9 table: a later script (Unicode 13's Yezidi) and unassigned.
        for c in ['\u{10E80}', '\u{0378}', '\u{30000}', '\u{10FFFF}'] {
            assert_eq!(raw_script(c), table::ANY, "{c:?}");
        }
    }

    #[test]
    fn cuts_as_hf() {
        // HF's own tests, then the leading and Any-only cases.
        assert_eq!(pieces("どこで生れ。Yes"), ["どこで生れ", "。", "Yes"]);
        assert_eq!(
            pieces("Apples are りんご 林檎"),
            ["Apples are ", "りんご 林檎"]
        );
        assert_eq!(pieces("  abc de"), ["abc de"]);
        assert!(pieces("   ").is_empty());
        assert!(pieces("").is_empty());
        assert_eq!(pieces("a\u{30000}b"), ["a\u{30000}b"]);
        assert_eq!(pieces("x\u{301}y12"), ["x", "\u{301}", "y", "12"]);
    }
}
