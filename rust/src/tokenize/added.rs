//! Added tokens: strings that are cut out of the input before the model sees it, with HF
//! tokenizers' flags (special, normalized, lstrip, rstrip, single_word) and its matching rules
//! (leftmost-longest; non-normalized tokens matched on the raw input, normalized ones after
//! normalization).
use super::normalize::Normalizer;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;
use rustc_hash::FxHashMap;
use std::sync::LazyLock;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
    pub special: bool,
}

#[derive(Debug, Default, Clone)]
pub struct AddedVocab {
    pub tokens: Vec<AddedToken>,
    by_id: FxHashMap<u32, usize>,
    by_content: FxHashMap<String, u32>,
    raw: Option<Matcher>,
    normalized: Option<Matcher>,
    /// Normalized forms that differ from the content (HF decodes these, see `decode_str`).
    normalized_forms: FxHashMap<u32, String>,
    special_contents: rustc_hash::FxHashSet<String>,
    /// HF's `encode_special_tokens`: special tokens are not cut out, their text goes to the
    /// model like any other (non-special added tokens still are).
    pub encode_special_tokens: bool,
}

/// A matcher of added tokens: the automaton, the id of each of its patterns, and the patterns'
/// first bytes when there are at most three (`<` alone, for `<|endoftext|>` and its kin).
#[derive(Debug, Clone)]
struct Matcher {
    ac: AhoCorasick,
    ids: Vec<u32>,
    starts: Option<Vec<u8>>,
}

impl Matcher {
    fn new(pairs: Vec<(String, u32)>) -> Self {
        let ac = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(pairs.iter().map(|p| p.0.as_str()))
            .expect("added-token matcher");
        let mut starts: Vec<u8> = pairs.iter().filter_map(|p| p.0.bytes().next()).collect();
        starts.sort_unstable();
        starts.dedup();
        Self {
            ac,
            ids: pairs.into_iter().map(|p| p.1).collect(),
            starts: (starts.len() <= 3).then_some(starts),
        }
    }

    /// Whether `text` may hold a pattern: text without any of their first bytes holds none,
    /// found by one `memchr` pass (the automaton's own search start was ~2% of a ~100-byte
    /// call, most of which hold no added token).
    fn may_occur(&self, text: &[u8]) -> bool {
        match self.starts.as_deref() {
            Some([]) => false,
            Some(&[a]) => memchr::memchr(a, text).is_some(),
            Some(&[a, b]) => memchr::memchr2(a, b, text).is_some(),
            Some(&[a, b, c]) => memchr::memchr3(a, b, c, text).is_some(),
            _ => true,
        }
    }
}

static STARTS_WITH_WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\w").unwrap());
static ENDS_WITH_WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w$").unwrap());
static SPACES_AT_START: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*").unwrap());
static SPACES_AT_END: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s*$").unwrap());

/// A segment of the input: an added token's id, or text for the model.
pub type Split = (Option<u32>, (usize, usize));
/// The splits of one text: nearly always a few (one, when no added token occurs).
pub type Splits = smallvec::SmallVec<[Split; 4]>;

impl AddedVocab {
    /// Builds the matchers; `normalizer` gives the normalized form of `normalized` tokens.
    pub fn new(tokens: Vec<AddedToken>, normalizer: Option<&Normalizer>) -> Self {
        let mut v = Self {
            tokens,
            ..Self::default()
        };
        v.refresh(normalizer);
        v
    }

    pub fn refresh(&mut self, normalizer: Option<&Normalizer>) {
        self.by_id = self
            .tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id, i))
            .collect();
        self.by_content = self
            .tokens
            .iter()
            .map(|t| (t.content.clone(), t.id))
            .collect();
        self.special_contents = self
            .tokens
            .iter()
            .filter(|t| t.special)
            .map(|t| t.content.clone())
            .collect();
        self.normalized_forms.clear();
        let (mut raw, mut norm): (Vec<(String, u32)>, Vec<(String, u32)>) = (vec![], vec![]);
        // HF keys its matchers by id, so a content listed twice keeps only its last id.
        let mut seen: FxHashMap<u32, usize> = FxHashMap::default();
        for (i, t) in self.tokens.iter().enumerate() {
            seen.insert(t.id, i);
        }
        let mut order: Vec<usize> = seen.into_values().collect();
        order.sort_unstable();
        for i in order {
            let t = &self.tokens[i];
            if t.content.is_empty() {
                continue;
            }
            if t.normalized {
                let pattern =
                    normalizer.map_or_else(|| t.content.clone(), |n| n.normalize_str(&t.content));
                if pattern != t.content {
                    self.normalized_forms.insert(t.id, pattern.clone());
                }
                norm.push((pattern, t.id));
            } else {
                raw.push((t.content.clone(), t.id));
            }
        }
        let build = |pairs: Vec<(String, u32)>| (!pairs.is_empty()).then(|| Matcher::new(pairs));
        self.raw = build(raw);
        self.normalized = build(norm);
    }

    #[must_use]
    pub fn get(&self, id: u32) -> Option<&AddedToken> {
        self.by_id.get(&id).map(|&i| &self.tokens[i])
    }

    /// The string decoding starts from for an added token, and whether `skip_special_tokens`
    /// drops it. As in HF, a normalized token decodes from its normalized form, and only a string
    /// equal to a special token's content counts as special.
    #[must_use]
    pub fn decode_str(&self, id: u32) -> Option<(&str, bool)> {
        let t = self.get(id)?;
        let s = self
            .normalized_forms
            .get(&id)
            .map_or(t.content.as_str(), String::as_str);
        Some((s, self.special_contents.contains(s)))
    }

    #[must_use]
    pub fn id_of(&self, content: &str) -> Option<u32> {
        self.by_content.get(content).copied()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    #[must_use]
    pub fn has_raw(&self) -> bool {
        self.raw.is_some()
    }

    #[must_use]
    pub fn has_normalized(&self) -> bool {
        self.normalized.is_some()
    }

    /// Cuts `sentence` into added tokens and the text between them (HF's `find_matches`).
    #[must_use]
    pub fn find(&self, sentence: &str, normalized: bool) -> Splits {
        if sentence.is_empty() {
            return smallvec::smallvec![(None, (0, 0))];
        }
        let matcher = if normalized {
            &self.normalized
        } else {
            &self.raw
        };
        let Some(matcher) = matcher
            .as_ref()
            .filter(|m| m.may_occur(sentence.as_bytes()))
        else {
            return smallvec::smallvec![(None, (0, sentence.len()))];
        };
        let mut out = Splits::new();
        let mut start_offset = 0;
        for m in matcher.ac.find_iter(sentence) {
            let (mut start, mut stop) = (m.start(), m.end());
            let id = matcher.ids[m.pattern().as_usize()];
            let token = self.get(id).expect("matcher ids are added tokens");
            // As HF: the match is skipped, not replaced by a shorter or later one.
            if self.encode_special_tokens && self.special_contents.contains(&token.content) {
                continue;
            }
            if token.single_word {
                let start_space = start == 0 || !ENDS_WITH_WORD.is_match(&sentence[..start]);
                let stop_space =
                    stop == sentence.len() || !STARTS_WITH_WORD.is_match(&sentence[stop..]);
                if !start_space || !stop_space {
                    continue;
                }
            }
            if token.lstrip {
                let new_start = SPACES_AT_END
                    .find(&sentence[..start])
                    .map_or(start, |m| m.start());
                start = new_start.max(start_offset);
            }
            if token.rstrip {
                stop += SPACES_AT_START
                    .find(&sentence[stop..])
                    .map_or(0, |m| m.end());
            }
            if start_offset < start {
                out.push((None, (start_offset, start)));
            }
            out.push((Some(id), (start, stop)));
            start_offset = stop;
        }
        if start_offset != sentence.len() {
            out.push((None, (start_offset, sentence.len())));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(contents: &[&str]) -> AddedVocab {
        let tokens = contents
            .iter()
            .enumerate()
            .map(|(i, c)| AddedToken {
                id: 100 + i as u32,
                content: (*c).to_string(),
                single_word: false,
                lstrip: false,
                rstrip: false,
                normalized: false,
                special: true,
            })
            .collect();
        AddedVocab::new(tokens, None)
    }

    /// Found with one to three distinct first bytes (the `memchr` pre-check) and with more (the
    /// automaton alone); text without any first byte is one split.
    fn token(id: u32, content: &str, special: bool) -> AddedToken {
        AddedToken {
            id,
            content: content.into(),
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special,
        }
    }

    #[test]
    fn encode_special_tokens_leaves_special_text_to_the_model() {
        let mut v = AddedVocab::new(vec![token(7, "<s>", true), token(8, "<t>", false)], None);
        let ids = |v: &AddedVocab| -> Vec<Option<u32>> {
            v.find("a<s>b<t>", false).iter().map(|s| s.0).collect()
        };
        assert_eq!(ids(&v), vec![None, Some(7), None, Some(8)]);
        v.encode_special_tokens = true;
        assert_eq!(ids(&v), vec![None, Some(8)]);
    }

    #[test]
    fn first_byte_check_finds_every_token() {
        for contents in [
            &["<|a|>"][..],
            &["<|a|>", "[X]"],
            &["<|a|>", "[X]", "{y}"],
            &["<|a|>", "[X]", "{y}", "é!"],
        ] {
            let v = vocab(contents);
            for (i, c) in contents.iter().enumerate() {
                let text = format!("ab {c} cd");
                let want: Splits = smallvec::smallvec![
                    (None, (0, 3)),
                    (Some(100 + i as u32), (3, 3 + c.len())),
                    (None, (3 + c.len(), text.len())),
                ];
                assert_eq!(v.find(&text, false), want, "{contents:?} {c}");
            }
            assert_eq!(
                v.find("plain <| text [ {", false).as_slice(),
                &[(None, (0, 17))]
            );
            assert_eq!(
                v.find("no start bytes", false).as_slice(),
                &[(None, (0, 14))]
            );
        }
    }
}
