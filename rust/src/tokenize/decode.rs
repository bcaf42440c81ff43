//! Decoders: token strings back to text, chained as HF tokenizers chains them.
use super::bytelevel::char_byte;
use super::pattern::Pattern;

#[derive(Debug, Clone)]
pub enum Decoder {
    ByteLevel,
    Replace {
        pattern: Pattern,
        content: String,
    },
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
    Fuse,
    ByteFallback,
    WordPiece {
        prefix: String,
        cleanup: bool,
    },
    /// SentencePiece's marker back to spaces; with a prepend scheme other than never, the first
    /// token loses its markers (HF drops every one of them there, not just the leading one).
    Metaspace {
        replacement: char,
        prepend: bool,
    },
    /// Connectionist temporal classification output: repeats collapsed, pads dropped, the word
    /// delimiter turned into spaces (after WordPiece-style cleanup) when `cleanup`.
    Ctc {
        pad_token: String,
        word_delimiter_token: String,
        cleanup: bool,
    },
    /// The end-of-word suffix of a BPE without a pre-tokenizer's markers (e.g. "</w>") back to
    /// a space, or to nothing on the last token (HF's `BPEDecoder`).
    Bpe {
        suffix: String,
    },
    Sequence(Vec<Decoder>),
}

impl Decoder {
    #[must_use]
    pub fn decode(&self, tokens: Vec<String>) -> String {
        self.chain(tokens).concat()
    }

    #[must_use]
    pub fn chain(&self, tokens: Vec<String>) -> Vec<String> {
        match self {
            Self::ByteLevel => {
                let mut bytes = Vec::new();
                for t in &tokens {
                    let mapped: Option<Vec<u8>> = t.chars().map(char_byte).collect();
                    match mapped {
                        Some(b) => bytes.extend(b),
                        None => bytes.extend_from_slice(t.as_bytes()),
                    }
                }
                vec![String::from_utf8_lossy(&bytes).into_owned()]
            }
            Self::Replace { pattern, content } => tokens
                .into_iter()
                .map(|t| {
                    let mut out = String::with_capacity(t.len());
                    for ((s, e), m) in pattern.find_matches(&t) {
                        out.push_str(if m { content } else { &t[s..e] });
                    }
                    out
                })
                .collect(),
            Self::Strip {
                content,
                start,
                stop,
            } => tokens
                .into_iter()
                .map(|t| {
                    let chars: Vec<char> = t.chars().collect();
                    let mut a = 0;
                    for (i, &c) in chars.iter().enumerate().take(*start) {
                        if c != *content {
                            break;
                        }
                        a = i + 1;
                    }
                    let mut b = chars.len();
                    for i in 0..(*stop).min(chars.len()) {
                        let idx = chars.len() - i - 1;
                        if chars[idx] != *content {
                            break;
                        }
                        b = idx;
                    }
                    chars[a.min(b)..b].iter().collect()
                })
                .collect(),
            Self::Fuse => vec![tokens.concat()],
            Self::Bpe { suffix } => {
                let last = tokens.len().saturating_sub(1);
                tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| t.replace(suffix.as_str(), if i == last { "" } else { " " }))
                    .collect()
            }
            Self::ByteFallback => byte_fallback(tokens),
            Self::WordPiece { prefix, cleanup } => tokens
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    // HF: every token but the first loses the prefix, or else gets a space.
                    let t = if i == 0 {
                        t
                    } else if let Some(rest) = t.strip_prefix(prefix.as_str()) {
                        rest.to_owned()
                    } else {
                        format!(" {t}")
                    };
                    if *cleanup {
                        super::wordpiece::cleanup(&t)
                    } else {
                        t
                    }
                })
                .collect(),
            Self::Metaspace {
                replacement,
                prepend,
            } => metaspace(tokens, *replacement, *prepend),
            Self::Ctc {
                pad_token,
                word_delimiter_token,
                cleanup,
            } => ctc(tokens, pad_token, word_delimiter_token, *cleanup),
            Self::Sequence(items) => items.iter().fold(tokens, |t, d| d.chain(t)),
        }
    }
}

fn metaspace(tokens: Vec<String>, replacement: char, prepend: bool) -> Vec<String> {
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.chars()
                .filter_map(|c| {
                    if c != replacement {
                        Some(c)
                    } else if i == 0 && prepend {
                        None
                    } else {
                        Some(' ')
                    }
                })
                .collect()
        })
        .collect()
}

fn ctc(tokens: Vec<String>, pad: &str, delimiter: &str, cleanup: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(tokens.len());
    let mut prev: Option<String> = None;
    for t in tokens {
        // Repeats collapse before anything else (HF's `dedup`).
        if prev.as_ref() == Some(&t) {
            continue;
        }
        let mut s = t.replace(pad, "");
        if cleanup {
            s = super::wordpiece::cleanup(&s).replace(delimiter, " ");
        }
        if !s.is_empty() {
            out.push(s);
        }
        prev = Some(t);
    }
    out
}

fn byte_fallback(tokens: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut pending: Vec<u8> = Vec::new();
    let flush = |pending: &mut Vec<u8>, out: &mut Vec<String>| {
        if pending.is_empty() {
            return;
        }
        match String::from_utf8(std::mem::take(pending)) {
            Ok(s) => out.push(s),
            Err(e) => out.extend(std::iter::repeat_n(
                "\u{FFFD}".to_string(),
                e.as_bytes().len(),
            )),
        }
    };
    for t in tokens {
        let byte = (t.len() == 6 && t.starts_with("<0x") && t.ends_with('>'))
            .then(|| u8::from_str_radix(&t[3..5], 16).ok())
            .flatten();
        if let Some(b) = byte {
            pending.push(b);
        } else {
            flush(&mut pending, &mut out);
            out.push(t);
        }
    }
    flush(&mut pending, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_and_fallback() {
        let d = Decoder::ByteLevel;
        assert_eq!(
            d.decode(vec![
                "Hello".into(),
                "Ġw".into(),
                "orld".into(),
                "âĤ".into()
            ]),
            "Hello world\u{FFFD}"
        );
        let f = Decoder::ByteFallback;
        assert_eq!(
            f.decode(vec![
                "<0xE2>".into(),
                "<0x82>".into(),
                "<0xAC>".into(),
                "a".into()
            ]),
            "€a"
        );
        assert_eq!(f.decode(vec!["<0xE2>".into(), "b".into()]), "\u{FFFD}b");
    }

    #[test]
    fn bpe_suffix_becomes_space_but_not_at_the_end() {
        let d = Decoder::Bpe {
            suffix: "</w>".into(),
        };
        let toks = ["My</w>", "na", "me</w>", "is</w>"]
            .map(String::from)
            .to_vec();
        assert_eq!(d.decode(toks), "My name is");
        assert_eq!(d.decode(vec![]), "");
    }

    #[test]
    fn metaspace_and_ctc() {
        let m = Decoder::Metaspace {
            replacement: '▁',
            prepend: true,
        };
        let t = || vec!["▁▁a▁b".to_string(), "▁c".into(), "x▁".into()];
        assert_eq!(m.decode(t()), "ab cx ");
        let never = Decoder::Metaspace {
            replacement: '▁',
            prepend: false,
        };
        assert_eq!(never.decode(t()), "  a b cx ");
        let ctc = Decoder::Ctc {
            pad_token: "<pad>".into(),
            word_delimiter_token: "|".into(),
            cleanup: true,
        };
        let ids = [
            "<pad>", "h", "h", "e", "<pad>", "l", "l", "<pad>", "l", "o", "|", "w",
        ];
        assert_eq!(ctc.decode(ids.map(String::from).to_vec()), "hello w");
    }

    #[test]
    fn strip_bounds() {
        let d = Decoder::Strip {
            content: ' ',
            start: 1,
            stop: 5,
        };
        assert_eq!(d.decode(vec!["  a ".into(), " ".into()]), " a");
    }
}
