//! Post-processors: special tokens around the sequences, type ids, offset trimming.
use super::bytelevel::BYTE_CHAR;
use super::encoding::Encoding;
use crate::error::TokenizeError;

/// The model's string for an id (for tokens an encoding stores by id only).
pub type Vocab<'a> = dyn Fn(u32) -> Option<&'a str> + 'a;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePiece {
    Sequence { second: bool, type_id: u32 },
    Special { id: String, type_id: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecialToken {
    pub ids: Vec<u32>,
    pub tokens: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum PostProcessor {
    ByteLevel {
        add_prefix_space: bool,
        trim_offsets: bool,
    },
    Template {
        single: Vec<TemplatePiece>,
        pair: Vec<TemplatePiece>,
        special: rustc_hash::FxHashMap<String, SpecialToken>,
    },
    /// RoBERTa: `<s> A </s>` and `<s> A </s> </s> B </s>`, type ids all 0, optional trimming.
    Roberta {
        sep: (String, u32),
        cls: (String, u32),
        trim_offsets: bool,
        add_prefix_space: bool,
    },
    /// BERT: `[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]`, type ids 0 then 1.
    Bert {
        sep: (String, u32),
        cls: (String, u32),
    },
    Sequence(Vec<PostProcessor>),
}

impl PostProcessor {
    /// Special tokens this processor adds around one sequence or a pair.
    #[must_use]
    pub fn added_tokens(&self, is_pair: bool) -> usize {
        match self {
            Self::ByteLevel { .. } => 0,
            Self::Template {
                single,
                pair,
                special,
            } => {
                let t = if is_pair { pair } else { single };
                t.iter()
                    .map(|p| match p {
                        TemplatePiece::Special { id, .. } => {
                            special.get(id).map_or(0, |s| s.ids.len())
                        }
                        TemplatePiece::Sequence { .. } => 0,
                    })
                    .sum()
            }
            Self::Roberta { .. } => {
                if is_pair {
                    4
                } else {
                    2
                }
            }
            Self::Bert { .. } => {
                if is_pair {
                    3
                } else {
                    2
                }
            }
            Self::Sequence(items) => items.iter().map(|p| p.added_tokens(is_pair)).sum(),
        }
    }

    /// HF's `PostProcessor::process`: sequence ids and type ids, then the processor, then merge.
    pub fn process(
        &self,
        encoding: Encoding,
        pair: Option<Encoding>,
        add_special_tokens: bool,
        vocab: &Vocab<'_>,
    ) -> Result<Encoding, TokenizeError> {
        let mut encodings = vec![encoding];
        encodings.extend(pair);
        for (i, e) in encodings.iter_mut().enumerate() {
            e.set_sequence_id(i);
            for o in &mut e.overflowing {
                o.set_sequence_id(i);
            }
            e.set_type_ids(i as u32);
        }
        let encodings = self.process_encodings(encodings, add_special_tokens, vocab)?;
        Ok(Encoding::merge(encodings, false))
    }

    fn process_encodings(
        &self,
        mut encodings: Vec<Encoding>,
        add_special_tokens: bool,
        vocab: &Vocab<'_>,
    ) -> Result<Vec<Encoding>, TokenizeError> {
        match self {
            Self::ByteLevel {
                add_prefix_space,
                trim_offsets,
            } => {
                if *trim_offsets {
                    trim_all(&mut encodings, *add_prefix_space, vocab);
                }
                for (i, e) in encodings.iter_mut().enumerate() {
                    e.set_sequence_id(i);
                }
                Ok(encodings)
            }
            Self::Template {
                single,
                pair,
                special,
            } => {
                let template = if encodings.len() == 2 { pair } else { single };
                let mut out = Vec::with_capacity(template.len());
                for piece in template {
                    match piece {
                        TemplatePiece::Sequence { second, type_id } => {
                            let i = usize::from(*second);
                            let Some(e) = encodings.get_mut(i) else {
                                return Err(TokenizeError::Encode(
                                    "the post-processor's template needs a pair of sequences"
                                        .into(),
                                ));
                            };
                            e.set_type_ids(*type_id);
                            e.set_sequence_id(i);
                            out.push(e.clone());
                        }
                        TemplatePiece::Special { id, type_id } => {
                            if add_special_tokens {
                                let tok = &special[id];
                                out.push(Encoding::special(&tok.ids, &tok.tokens, *type_id));
                            }
                        }
                    }
                }
                Ok(out)
            }
            Self::Roberta {
                sep,
                cls,
                trim_offsets,
                add_prefix_space,
            } => {
                if *trim_offsets {
                    trim_all(&mut encodings, *add_prefix_space, vocab);
                }
                for e in &mut encodings {
                    e.set_type_ids(0);
                }
                if !add_special_tokens {
                    return Ok(encodings);
                }
                Ok(wrap(encodings, cls, sep, true))
            }
            Self::Bert { sep, cls } => {
                if !add_special_tokens {
                    return Ok(encodings);
                }
                Ok(wrap(encodings, cls, sep, false))
            }
            Self::Sequence(items) => {
                for p in items {
                    encodings = p.process_encodings(encodings, add_special_tokens, vocab)?;
                }
                Ok(encodings)
            }
        }
    }
}

/// BERT / RoBERTa framing of each encoding (and its overflowing windows): the first sequence
/// gets `cls A sep`, the second `sep B sep` (RoBERTa, type 0) or `B sep` (BERT, type 1).
fn wrap(
    encodings: Vec<Encoding>,
    cls: &(String, u32),
    sep: &(String, u32),
    roberta: bool,
) -> Vec<Encoding> {
    let frame = |e: &Encoding, i: usize| -> Encoding {
        let (head, type_id): (Vec<&(String, u32)>, u32) = match (i, roberta) {
            (0, _) => (vec![cls], 0),
            (_, true) => (vec![sep], 0),
            (_, false) => (vec![], 1),
        };
        let mut out = Encoding::default();
        for s in &head {
            out.merge_with(
                Encoding::special(&[s.1], std::slice::from_ref(&s.0), type_id),
                false,
            );
        }
        let mut body = e.clone();
        body.overflowing.clear();
        body.set_type_ids(type_id);
        let start = out.len();
        out.merge_with(body, false);
        out.sequence_ranges = vec![(i, start..out.len())];
        out.merge_with(
            Encoding::special(&[sep.1], std::slice::from_ref(&sep.0), type_id),
            false,
        );
        out.sequence_ranges = vec![(i, start..out.len() - 1)];
        out
    };
    encodings
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut framed = frame(e, i);
            framed.overflowing = e.overflowing.iter().map(|o| frame(o, i)).collect();
            framed
        })
        .collect()
}

/// `trim_offsets_of` on every encoding and its overflowing windows.
fn trim_all(encodings: &mut [Encoding], add_prefix_space: bool, vocab: &Vocab<'_>) {
    for e in encodings {
        trim_offsets_of(e, add_prefix_space, vocab);
        for o in &mut e.overflowing {
            trim_offsets_of(o, add_prefix_space, vocab);
        }
    }
}

/// Moves offsets past leading and trailing spaces of byte-level tokens (HF's `process_offsets`).
fn trim_offsets_of(e: &mut Encoding, add_prefix_space: bool, vocab: &Vocab<'_>) {
    let space = BYTE_CHAR[b' ' as usize];
    for i in 0..e.len() {
        let Some(token) = e.token(i).or_else(|| vocab(e.ids[i])) else {
            continue;
        };
        let is_space = |c: &char| *c == space || c.is_whitespace();
        let mut leading = token.chars().take_while(is_space).count() as u32;
        let trailing = token.chars().rev().take_while(is_space).count() as u32;
        let o = &mut e.offsets[i];
        if leading > 0 {
            let is_first = i == 0 || o.0 == 0;
            if is_first && add_prefix_space && leading == 1 {
                leading = 0;
            }
            o.0 = (o.0 + leading).min(o.1);
        }
        if trailing > 0 && o.1 >= trailing {
            o.1 = (o.1 - trailing).max(o.0);
        }
    }
}
