//! The BPE model: a word's symbols are merged pair by pair, lowest merge rank first (leftmost on
//! ties), exactly as HF tokenizers' `Word::merge_all` orders them, so ids are identical.
//!
//! Performance notes: byte-level vocabularies get a byte -> id table and a raw-bytes vocabulary,
//! so a piece is tokenized from its UTF-8 bytes without building the byte-level string; results
//! are cached per thread (like HF's per-thread cache) keyed by the piece's bytes.
use super::bytelevel::{decode_token_into, BYTE_CHAR};
use super::bytesmap::{self, BytesMap};
use super::cache_cap;
use super::load_thread::side_by_side;
pub(crate) use super::piece_cache::Pending;
use super::piece_cache::{wide_key, wide_key_at, HotCache, WideCache, HOT_TOKENS_MAX, WIDE_LEN};
use crate::error::TokenizeError;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Words of at most this many symbols merge by scanning (see `Word::merge_short`).
const SHORT_WORD: usize = 48;
/// Words of at most this many symbols shift by fixed-length copies in `Word::merge_short`.
const SHIFT: usize = 16;

/// Pieces longer than this are not cached (HF uses the same bound).
const CACHE_MAX_LEN: usize = 256;
/// Most pieces the full cache holds (a thread, a model); past it, it starts over. It held 100k:
/// a 29 MB corpus (261k distinct pieces, 60k of them past the small caches' 32 bytes)
/// overflowed it every round, and its rounds after the first ran at 46-57 MB/s against
/// 122-140 with this capacity alone (`encode_file`, one thread; the 5 MB corpus unchanged;
/// 218-224 once the small caches' pools and the wide cache grew too, see `piece_cache`). At
/// most ~24 MiB a thread: a 16 MiB table and the tokens.
const CACHE_CAPACITY: usize = 1 << 18;

static NEXT_MODEL_ID: AtomicU64 = AtomicU64::new(1);

/// A model's identity in the per-thread caches: a process-unique number, so a thread's cache
/// never serves another model's tokens, and a token shared by the model and its clones, so a
/// thread drops the caches of models that are gone when it next switches models, or hands one
/// of them, emptied, to the model it switches to (see `Scratch::switch_cache`). (They were
/// kept until four other models had taken their places: a process that made a fresh tokenizer a
/// few times held up to 4 x ~40 MiB of dead caches in each thread that had encoded.)
#[derive(Clone, Debug)]
pub(crate) struct ModelId {
    id: u64,
    alive: Arc<()>,
}

impl ModelId {
    pub(crate) fn new() -> Self {
        Self {
            id: NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed),
            alive: Arc::new(()),
        }
    }
}

/// Models whose caches one thread keeps at a time: a process that alternates between a few
/// tokenizers (a BERT and a GPT, say) keeps each one's words, instead of emptying one shared
/// cache at every switch.
const CACHED_MODELS: usize = 4;

/// A model's cached results: piece -> (start, count) of its tokens in `tokens`, one flat vector
/// instead of an allocation per entry (a hit then reads the table and one contiguous run).
#[derive(Default)]
struct Cache {
    map: BytesMap<(u32, u32)>,
    tokens: Vec<(u32, u32)>,
    hot: HotCache,
    wide: WideCache,
}

impl Cache {
    /// Stores `tokens` for `key` in the full cache (`map`, `all`).
    fn store(
        map: &mut BytesMap<(u32, u32)>,
        all: &mut Vec<(u32, u32)>,
        key: &[u8],
        tokens: &[(u32, u32)],
    ) {
        if map.len() >= cache_cap::full_pieces(CACHE_CAPACITY)
            || all.len() + tokens.len() > cache_cap::full_tokens(u32::MAX as usize)
        {
            // The full cache starts over; the small caches in front of it keep the frequent
            // pieces (they were emptied too).
            map.clear();
            all.clear();
        }
        let start = all.len() as u32;
        all.extend_from_slice(tokens);
        map.insert(key, (start, tokens.len() as u32));
    }

    /// Bytes held by the caches.
    fn bytes(&self) -> usize {
        self.map.bytes()
            + self.tokens.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.hot.bytes()
            + self.wide.bytes()
    }

    /// Empties the caches for another model, keeping the small caches' tables (see
    /// `HotCache::renew`).
    fn renew(&mut self) {
        // Under a cap lowered since these caches grew, a new model starts within it.
        if cache_cap::cap_bytes().is_some_and(|cap| self.bytes() > cap) {
            *self = Self::default();
            return;
        }
        self.map.clear();
        self.tokens.clear();
        self.hot.renew();
        self.wide.renew();
    }
}

/// Per-thread working memory of the models: result caches (like HF's per-thread cache) and a
/// scratch word. Fetched once per encode call (`with_scratch`): a thread-local in a Python
/// extension costs a `__tls_get_addr` call per access, too much to pay per piece.
#[derive(Default)]
pub struct Scratch {
    /// One cache per model (its id, and whether it is alive), the most recently used first.
    caches: Vec<(u64, Weak<()>, Cache)>,
    word: Word,
    /// Unigram's Viterbi table.
    pub(crate) lattice: Vec<(f64, u32, u32)>,
    pub(crate) lattice32: Vec<(f32, u32, u32)>,
    /// Pre-tokenized pieces of the text being encoded (reused across calls).
    pub(crate) pieces: Vec<super::pretokenize::Piece>,
    /// The ids-only encode's run of pending pieces (reused across calls).
    pub(crate) run: Option<Box<[Pending; super::PREFETCH_RUN]>>,
}

impl Scratch {
    /// The cache of `model_id`, moved to the front (made, or taken over from the least recently
    /// used model, if missing).
    #[inline]
    fn cache(&mut self, model: &ModelId) -> &mut Cache {
        if self.caches.first().is_some_and(|c| c.0 == model.id) {
            return &mut self.caches[0].2;
        }
        self.switch_cache(model)
    }

    #[cold]
    fn switch_cache(&mut self, model: &ModelId) -> &mut Cache {
        if let Some(i) = self.caches.iter().position(|c| c.0 == model.id) {
            self.caches[..=i].rotate_right(1);
        } else {
            // A dropped model's cache (or, with `CACHED_MODELS` alive, the least recently used
            // one) is taken over, its tables kept and emptied in place (`Cache::renew`): a
            // fresh tokenizer made after another was dropped (a new one per job, a bench's
            // rounds) does not map and zero new tables.
            let alive = Arc::downgrade(&model.alive);
            let reuse = self
                .caches
                .iter()
                .position(|c| c.1.strong_count() == 0)
                .or_else(|| (self.caches.len() >= CACHED_MODELS).then(|| self.caches.len() - 1));
            if let Some(i) = reuse {
                self.caches[..=i].rotate_right(1);
                let c = &mut self.caches[0];
                (c.0, c.1) = (model.id, alive);
                c.2.renew();
            } else {
                self.caches.insert(0, (model.id, alive, Cache::default()));
            }
        }
        // The caches of other models dropped since are released.
        let mut first = true;
        self.caches
            .retain(|c| std::mem::take(&mut first) || c.1.strong_count() > 0);
        &mut self.caches[0].2
    }

    /// Bytes held by this thread's caches, of all models.
    pub fn cache_bytes(&self) -> usize {
        self.caches.iter().map(|c| c.2.bytes()).sum()
    }

    /// The cached tokens of `key` for the model `model_id`.
    #[inline]
    pub(crate) fn cached_tokens(&mut self, model: &ModelId, key: &[u8]) -> Option<&[(u32, u32)]> {
        let cache = self.cache(model);
        let &(start, n) = cache.map.get(key)?;
        Some(&cache.tokens[start as usize..(start + n) as usize])
    }

    /// Caches `tokens` for `key` of the model `model_id`.
    pub(crate) fn cache_tokens(&mut self, model: &ModelId, key: &[u8], tokens: &[(u32, u32)]) {
        if key.len() > CACHE_MAX_LEN {
            return;
        }
        let cache = self.cache(model);
        Cache::store(&mut cache.map, &mut cache.tokens, key, tokens);
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Runs `f` with this thread's scratch (a fresh one if it is already in use, e.g. re-entrantly).
pub fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => f(&mut s),
        Err(_) => f(&mut Scratch::default()),
    })
}

#[derive(Debug, Clone, Default)]
pub struct BpeOptions {
    pub unk_token: Option<String>,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    pub ignore_merges: bool,
}

#[derive(Debug, Clone)]
pub struct Bpe {
    pub vocab: FxHashMap<String, u32>,
    pub vocab_r: FxHashMap<u32, String>,
    /// (left id, right id) -> (rank, merged id)
    merges: Merges,
    pub opts: BpeOptions,
    unk_id: Option<u32>,
    /// Byte-level fast path: the id of each byte's char, and the vocabulary by raw bytes.
    byte_ids: [Option<u32>; 256],
    bytes_vocab: BytesMap<u32>,
    /// `<0xAB>` tokens for byte_fallback.
    fallback_ids: [Option<u32>; 256],
    /// Per vocabulary id: does BPE on the token's own bytes give back that one token? (0 not known
    /// yet, 1 yes, 2 no.) A piece that is a vocabulary token whose answer is yes needs no merging:
    /// a memo of BPE's own result, so it is exact even where `ignore_merges` is false.
    reach: std::sync::Arc<[std::sync::atomic::AtomicU8]>,
    /// SentencePiece vocabularies (see `marker_splits`): a piece may be cut before every `▁`
    /// that follows another char, and each part merged (and cached) on its own.
    split_at_marker: bool,
    model_id: ModelId,
}

/// Whether no merge can join a symbol that ends in a char other than `▁` with one that starts
/// with `▁`: then BPE never merges across such a place, so merging the parts between them
/// separately gives exactly the tokens of merging the whole piece (merges inside a part are
/// the same, in the same rank order, and none spans two parts). SentencePiece vocabularies
/// are like that (pieces carry `▁` only in front), and their pieces are whole texts (no
/// pre-tokenizer splits them), so this turns one long merge into cached word-sized ones.
/// (Also needed, checked by the caller: no char vanishes, which would make its neighbours
/// adjacent.)
fn marker_splits(
    vocab: &FxHashMap<String, u32>,
    merges: &[(String, String)],
    opts: &BpeOptions,
) -> bool {
    fn inner_marker(s: &str) -> bool {
        let mut prev: Option<char> = None;
        for c in s.chars() {
            if c == '\u{2581}' && prev.is_some_and(|p| p != '\u{2581}') {
                return true;
            }
            prev = Some(c);
        }
        false
    }
    opts.continuing_subword_prefix.is_none()
        && opts.end_of_word_suffix.is_none()
        && vocab.contains_key("\u{2581}")
        && !opts
            .unk_token
            .as_deref()
            .is_some_and(|u| u.chars().all(|c| c == '\u{2581}'))
        && merges
            .iter()
            .all(|(a, b)| !inner_marker(&format!("{a}{b}")))
}

impl Bpe {
    pub fn new(
        vocab: FxHashMap<String, u32>,
        merges: &[(String, String)],
        opts: BpeOptions,
    ) -> Result<Self, TokenizeError> {
        // The byte-level table on a thread of its own while this one reads the merges (each
        // ~20% of a large vocabulary's load; cl100k: 90-120 ms in all).
        let (bytes_vocab, merge_map) = side_by_side(
            vocab.len() >= PARALLEL_LOAD_MIN,
            || bytes_vocab_of(&vocab),
            || merge_map_of(&vocab, merges, &opts),
        );
        let merge_map = merge_map?;
        let unk_id = match &opts.unk_token {
            Some(t) => vocab.get(t).copied(),
            None => None,
        };
        let mut byte_ids = [None; 256];
        let mut fallback_ids = [None; 256];
        for b in 0..=255u8 {
            byte_ids[b as usize] = vocab
                .get(BYTE_CHAR[b as usize].to_string().as_str())
                .copied();
            fallback_ids[b as usize] = vocab.get(format!("<0x{b:02X}>").as_str()).copied();
        }
        // A char that is dropped (no unk, no byte token) would bring its neighbours together.
        let nothing_vanishes =
            unk_id.is_some() || (opts.byte_fallback && fallback_ids.iter().all(Option::is_some));
        let split_at_marker = nothing_vanishes && marker_splits(&vocab, merges, &opts);
        let vocab_r = vocab.iter().map(|(t, &id)| (id, t.clone())).collect();
        let max_id = vocab.values().copied().max().map_or(0, |m| m as usize + 1);
        let reach = (0..max_id)
            .map(|_| std::sync::atomic::AtomicU8::new(0))
            .collect();
        Ok(Self {
            vocab,
            vocab_r,
            merges: merge_map,
            opts,
            unk_id,
            byte_ids,
            bytes_vocab,
            fallback_ids,
            reach,
            split_at_marker,
            model_id: ModelId::new(),
        })
    }

    /// Whether byte-level input can take the fast path (no prefix/suffix decorations).
    fn plain(&self) -> bool {
        self.opts.continuing_subword_prefix.is_none() && self.opts.end_of_word_suffix.is_none()
    }

    /// Tokenizes one byte-level piece given as its raw bytes: pushes `(id, byte length)`.
    pub fn tokenize_bytes(
        &self,
        piece: &[u8],
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        if piece.is_empty() {
            return Ok(());
        }
        if !self.plain() {
            // Rare: decorated byte-level vocabularies go through the generic char path.
            let s: String = piece.iter().map(|&b| BYTE_CHAR[b as usize]).collect();
            let mut tmp = Vec::new();
            self.tokenize_chars(&s, &mut tmp, scratch)?;
            // Each byte-level char stands for one byte.
            let mut chars = s.chars();
            for (id, len) in tmp {
                let mut n = 0u32;
                let mut bytes = 0;
                while bytes < len {
                    bytes += chars.next().map_or(len as usize, char::len_utf8) as u32;
                    n += 1;
                }
                out.push((id, n));
            }
            return Ok(());
        }
        if piece.len() == 1 {
            if let Some(id) = self.byte_ids[piece[0] as usize] {
                out.push((id, 1));
                return Ok(());
            }
        }
        if piece.len() > WIDE_LEN {
            self.tokenize_bytes_cold(piece, out, scratch, true);
            return Ok(());
        }
        let key = bytesmap::split(piece);
        let cache = scratch.cache(&self.model_id);
        let hit = if piece.len() <= 16 {
            cache.hot.get(piece.len(), key.0, key.1, out)
        } else {
            cache.wide.get(piece.len(), &wide_key(piece), out)
        };
        if hit {
            return Ok(());
        }
        self.tokenize_small_miss(piece, key, out, scratch);
        Ok(())
    }

    /// The ids alone of one byte-level piece (the ids-only path): as `tokenize_bytes`, with the
    /// small caches' ids pushed straight into `ids`. `key` is `bytesmap::split(piece)`, computed
    /// by the caller (which prefetched with it). `tokens` is scratch space.
    #[inline]
    pub fn ids_bytes(
        &self,
        piece: &[u8],
        key: (u64, u64),
        ids: &mut Vec<u32>,
        tokens: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        tokens.clear();
        if (1..=WIDE_LEN).contains(&piece.len()) && self.plain() {
            let cache = scratch.cache(&self.model_id);
            let hit = if piece.len() <= 16 {
                cache.hot.get_ids(piece.len(), key.0, key.1, ids)
            } else {
                cache.wide.get_ids(piece.len(), &wide_key(piece), ids)
            };
            if hit {
                return Ok(());
            }
            self.tokenize_small_miss(piece, key, tokens, scratch);
        } else {
            self.tokenize_bytes(piece, tokens, scratch)?;
        }
        ids.extend(tokens.iter().map(|t| t.0));
        Ok(())
    }

    /// A plain byte-level piece of at most 32 bytes (`key` its `split`) that the small caches
    /// missed: tokenized past them, and remembered in the one for its length (if it fits).
    fn tokenize_small_miss(
        &self,
        piece: &[u8],
        key: (u64, u64),
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) {
        let start = out.len();
        // A piece the hot cache holds goes to the full cache only once evicted from it (storing
        // every cold piece in both was ~10% of a fresh tokenizer's first pass).
        let hot = piece.len() <= 16;
        self.tokenize_bytes_cold(piece, out, scratch, !hot);
        let cache = scratch.cache(&self.model_id);
        let tokens = &out[start..];
        if !hot {
            cache.wide.put(piece.len(), &wide_key(piece), tokens);
        } else if tokens.len() > HOT_TOKENS_MAX {
            Cache::store(&mut cache.map, &mut cache.tokens, piece, tokens);
        } else {
            let Cache {
                hot,
                map,
                tokens: all,
                ..
            } = cache;
            hot.put_keeping(piece.len(), key.0, key.1, tokens, |bytes, tokens| {
                if map.get(bytes).is_none() {
                    Cache::store(map, all, bytes, tokens);
                }
            });
        }
    }

    /// The piece `text[start..end]` of an ids-only run: its key and hot set, with that set (or
    /// the wide cache's) prefetched (see `prefetch`). Always inlined: once a piece, and when
    /// it was called its result came back through memory and was copied out with wider loads
    /// than its stores (a store-forwarding stall).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub(crate) fn pending(
        &self,
        text: &[u8],
        start: usize,
        end: usize,
        scratch: &mut Scratch,
    ) -> Pending {
        let (k0, k1) = bytesmap::split_at(text, start, end);
        let len = end - start;
        let cache = scratch.cache(&self.model_id);
        // One-byte pieces (a sixth of them) take the hot cache too, with no test of their own
        // in front: pieces alternate between one byte and more at random, so that test was a
        // branch often mispredicted (a little faster without it, in alternating runs).
        let set = if len <= 16 && self.plain() {
            let set = cache.hot.set(k0, k1);
            cache.hot.prefetch_set(set);
            set as u32
        } else {
            if (17..=WIDE_LEN).contains(&len) {
                cache
                    .wide
                    .prefetch(len, &wide_key_at(text, start, end, k0, k1));
            } else if (WIDE_LEN + 1..=CACHE_MAX_LEN).contains(&len) {
                // Longer pieces (3% of a multilingual corpus's bytes) are looked up in the full
                // cache, whose slot was a miss to memory (nearly all of a hit's ~250 ns).
                cache.map.prefetch_key(&text[start..end]);
            }
            u32::MAX
        };
        Pending {
            start: start as u32,
            end: end as u32,
            k0,
            k1,
            set,
            len: len as u32,
        }
    }

    /// Pushes the ids of a run of pieces of `text` (see `pending`): hot-cache hits in one tight
    /// loop, the rest through `ids_bytes`.
    #[inline]
    pub(crate) fn ids_run(
        &self,
        text: &[u8],
        run: &[Pending],
        ids: &mut Vec<u32>,
        tokens: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        let mut i = 0;
        while i < run.len() {
            let cache = scratch.cache(&self.model_id);
            i += cache.hot.hits(&run[i..], ids);
            if let Some(p) = run.get(i) {
                let (start, end) = (p.start as usize, p.end as usize);
                let piece = &text[start..end];
                if (17..=WIDE_LEN).contains(&piece.len()) && self.plain() {
                    // A wide piece (17-32 bytes: a fifth of the loop's exits on the test
                    // corpus) from its key's first half, already split; on a miss, straight
                    // past the small caches (`ids_bytes` would look in the wide one again).
                    let key = wide_key_at(text, start, end, p.k0, p.k1);
                    if !cache.wide.get_ids(piece.len(), &key, ids) {
                        tokens.clear();
                        self.tokenize_small_miss(piece, (p.k0, p.k1), tokens, scratch);
                        ids.extend(tokens.iter().map(|t| t.0));
                    }
                } else {
                    self.ids_bytes(piece, (p.k0, p.k1), ids, tokens, scratch)?;
                }
                i += 1;
            }
        }
        Ok(())
    }

    /// Asks the CPU to start loading the small-cache set of a piece (`pending`'s prefetch,
    /// for the offsets path). Lookups are memory-bound (profiles show them stalled on that load),
    /// and a piece's lookup does not depend on the previous one's, so prefetching a run of pieces
    /// overlaps their misses.
    #[inline]
    pub fn prefetch(&self, piece: &[u8], scratch: &mut Scratch) {
        if !piece.is_empty() {
            self.pending(piece, 0, piece.len(), scratch);
        }
    }

    /// `tokenize_bytes` past the hot cache: the vocabulary, then the cache, then BPE.
    #[inline]
    /// `store`: whether a piece merged here goes into the full cache.
    fn tokenize_bytes_cold(
        &self,
        piece: &[u8],
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
        store: bool,
    ) {
        // Pieces that get here are mostly long or many-token ones, all in the full cache after
        // their first time (a single-token vocabulary piece is held by the small caches), so
        // the cache goes before the vocabulary: one table probe instead of two.
        if let Some(hit) = scratch.cached_tokens(&self.model_id, piece) {
            out.extend_from_slice(hit);
            return;
        }
        if let Some(&id) = self.bytes_vocab.get(piece) {
            if self.opts.ignore_merges {
                out.push((id, piece.len() as u32));
                return;
            }
            let flag = &self.reach[id as usize];
            match flag.load(Ordering::Relaxed) {
                1 => {
                    out.push((id, piece.len() as u32));
                    return;
                }
                2 => {}
                _ => {
                    let start = out.len();
                    self.merge_bytes(piece, out, &mut scratch.word);
                    let whole = out.len() == start + 1 && out[start].0 == id;
                    flag.store(if whole { 1 } else { 2 }, Ordering::Relaxed);
                    return;
                }
            }
        }
        // Not cached (looked up above): merged, and cached if asked.
        let start = out.len();
        self.merge_bytes(piece, out, &mut scratch.word);
        if store {
            scratch.cache_tokens(&self.model_id, piece, &out[start..]);
        }
    }

    /// BPE on a byte-level piece, uncached.
    fn merge_bytes(&self, piece: &[u8], out: &mut Vec<(u32, u32)>, word: &mut Word) {
        word.symbols.clear();
        word.pending_unk = None;
        for &b in piece {
            match self.byte_ids[b as usize] {
                Some(id) => word.add(id, 1),
                None => self.unknown(word, &[b], 1),
            }
        }
        word.flush_unk();
        word.merge_all(&self.merges);
        word.emit(out);
    }

    /// Tokenizes a piece char by char (HF's `merge_word`): pushes `(id, byte length)`.
    pub fn tokenize_chars(
        &self,
        piece: &str,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        if piece.is_empty() {
            return Ok(());
        }
        if self.opts.ignore_merges {
            if let Some(&id) = self.vocab.get(piece) {
                out.push((id, piece.len() as u32));
                return Ok(());
            }
        }
        if self.split_at_marker {
            // Cut before each `▁` that follows another char (see `marker_splits`).
            let bytes = piece.as_bytes();
            let mut start = 0;
            let mut at = 0;
            while let Some(i) = find_marker(&bytes[at..]) {
                let i = at + i;
                if i > start && !piece[..i].ends_with('\u{2581}') {
                    self.merge_chars(&piece[start..i], out, scratch)?;
                    start = i;
                }
                at = i + 3;
            }
            return self.merge_chars(&piece[start..], out, scratch);
        }
        self.merge_chars(piece, out, scratch)
    }

    /// HF's `merge_word` on one piece (or part of one), cached.
    fn merge_chars(
        &self,
        piece: &str,
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
    ) -> Result<(), TokenizeError> {
        self.cached(piece.as_bytes(), out, scratch, |this, out, word| {
            word.symbols.clear();
            word.pending_unk = None;
            let mut buf = String::new();
            let n = piece.chars().count();
            for (i, c) in piece.chars().enumerate() {
                buf.clear();
                if i > 0 {
                    if let Some(p) = &this.opts.continuing_subword_prefix {
                        buf.push_str(p);
                    }
                }
                buf.push(c);
                if i + 1 == n {
                    if let Some(s) = &this.opts.end_of_word_suffix {
                        buf.push_str(s);
                    }
                }
                let len = c.len_utf8() as u32;
                match this.vocab.get(buf.as_str()) {
                    Some(&id) => word.add(id, len),
                    None => this.unknown(word, buf.as_bytes(), len),
                }
            }
            word.flush_unk();
            word.merge_all(&this.merges);
            word.emit(out);
            Ok(())
        })
    }

    /// A symbol missing from the vocabulary: byte fallback, else unk (fused if asked), else
    /// dropped, in HF's order.
    fn unknown(&self, word: &mut Word, bytes: &[u8], len: u32) {
        if self.opts.byte_fallback {
            let ids: Option<Vec<u32>> = bytes
                .iter()
                .map(|&b| self.fallback_ids[b as usize])
                .collect();
            if let Some(ids) = ids {
                // HF appends fallback bytes without flushing a pending unk first.
                for id in ids {
                    word.push(id, 1);
                }
                return;
            }
        }
        if let Some(unk) = self.unk_id {
            word.add_unk(unk, len, self.opts.fuse_unk);
        }
    }

    fn cached(
        &self,
        key: &[u8],
        out: &mut Vec<(u32, u32)>,
        scratch: &mut Scratch,
        compute: impl FnOnce(&Self, &mut Vec<(u32, u32)>, &mut Word) -> Result<(), TokenizeError>,
    ) -> Result<(), TokenizeError> {
        if key.len() > CACHE_MAX_LEN {
            return compute(self, out, &mut scratch.word);
        }
        if let Some(hit) = scratch.cached_tokens(&self.model_id, key) {
            out.extend_from_slice(hit);
            return Ok(());
        }
        let start = out.len();
        compute(self, out, &mut scratch.word)?;
        scratch.cache_tokens(&self.model_id, key, &out[start..]);
        Ok(())
    }

    #[must_use]
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    #[must_use]
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.vocab_r.get(&id).map(String::as_str)
    }
}

/// Vocabularies from this size on build their byte-level table on a second thread at load.
const PARALLEL_LOAD_MIN: usize = 10_000;

/// The merge table: each merge's pair of ids, its rank and the merged token's id.
fn merge_map_of(
    vocab: &FxHashMap<String, u32>,
    merges: &[(String, String)],
    opts: &BpeOptions,
) -> Result<Merges, TokenizeError> {
    let prefix = opts.continuing_subword_prefix.as_deref().unwrap_or("");
    let mut merge_map = Merges::with_capacity(merges.len());
    // One buffer for every merged token's text (a `format!` each was 4% of a load).
    let mut merged = String::new();
    for (rank, (a, b)) in merges.iter().enumerate() {
        let get = |t: &str| {
            vocab.get(t).copied().ok_or_else(|| {
                TokenizeError::invalid(
                    format!("model.merges[{rank}]"),
                    format!("merge token {t:?} is not in the vocabulary"),
                )
            })
        };
        let (ia, ib) = (get(a)?, get(b)?);
        merged.clear();
        merged.push_str(a);
        merged.push_str(match b.strip_prefix(prefix) {
            Some(rest) if !prefix.is_empty() => rest,
            _ => b,
        });
        let new_id = get(&merged)?;
        // The first (lowest) rank wins when a pair is listed twice, as in HF.
        merge_map.insert_first(ia, ib, (rank as u32, new_id));
    }
    Ok(merge_map)
}

/// The vocabulary by the raw bytes of its byte-level tokens (the others left out).
fn bytes_vocab_of(vocab: &FxHashMap<String, u32>) -> BytesMap<u32> {
    let mut bytes_vocab = BytesMap::with_capacity(vocab.len());
    let mut b = Vec::new();
    for (t, &id) in vocab {
        if decode_token_into(t, &mut b) {
            bytes_vocab.insert(&b, id);
        }
    }
    bytes_vocab
}

/// The byte position of the first `▁` (E2 96 81) in `b`.
#[inline]
fn find_marker(b: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = b[from..].iter().position(|&x| x == 0xE2) {
        let i = from + i;
        if b.get(i + 1) == Some(&0x96) && b.get(i + 2) == Some(&0x81) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// (left id, right id) -> (rank, merged id). Pairs of two ids below 256 (in a byte-level
/// vocabulary, its bytes: every pair a piece starts with) are read off a 65536-entry array
/// (512 KiB), the others off a map keyed by the pair packed into one `u64` (hashed in one step
/// where a tuple key took two). A piece's first lookups (two-fifths of the cold round's) were
/// each a probe into a table larger than L2; the cold round went 46.8-50.7 -> 50.8-53.0 MB/s
/// (`encode_file`, fresh processes, alternating).
#[derive(Debug, Clone)]
struct Merges {
    map: FxHashMap<u64, (u32, u32)>,
    /// `(rank, id)` of the pair `a << 8 | b`, `NO_MERGE` where there is none.
    low: Box<[(u32, u32)]>,
}

const NO_MERGE: (u32, u32) = (u32::MAX, 0);

impl Merges {
    fn with_capacity(n: usize) -> Self {
        Self {
            map: FxHashMap::with_capacity_and_hasher(n, Default::default()),
            low: vec![NO_MERGE; 1 << 16].into_boxed_slice(),
        }
    }

    /// Adds a merge unless the pair has one (the first, lowest rank wins, as in HF).
    fn insert_first(&mut self, a: u32, b: u32, merge: (u32, u32)) {
        let m = *self
            .map
            .entry(u64::from(a) << 32 | u64::from(b))
            .or_insert(merge);
        if (a | b) < 256 {
            self.low[(a << 8 | b) as usize] = m;
        }
    }

    #[inline]
    fn get(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        if (a | b) < 256 {
            let m = self.low[(a << 8 | b) as usize];
            return (m.0 != u32::MAX).then_some(m);
        }
        self.map.get(&(u64::from(a) << 32 | u64::from(b))).copied()
    }
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    len: u32,
    prev: i32,
    next: i32,
}

#[derive(Default)]
struct Word {
    symbols: Vec<Symbol>,
    pending_unk: Option<(u32, u32)>,
    /// `merge_heap`'s heap, its allocation kept from word to word.
    queue: Vec<Reverse<Candidate>>,
}

/// Candidates of the largest heap a thread's `Word` keeps for the next word (96 KiB).
const QUEUE_KEEP: usize = 1 << 12;

/// A pair queued in `Word::merge_heap`: ordered by rank, then position (`key`); the ids of
/// its two symbols when queued, and the id they merge into.
#[derive(Clone, Copy)]
struct Candidate {
    key: u64,
    left: u32,
    right: u32,
    new: u32,
}

impl Candidate {
    fn new(rank: u32, pos: usize, left: u32, right: u32, new: u32) -> Self {
        Self {
            key: u64::from(rank) << 32 | pos as u64,
            left,
            right,
            new,
        }
    }

    fn pos(self) -> usize {
        (self.key & u64::from(u32::MAX)) as usize
    }
}

// Ordered by `key` alone: entries of one key hold one pair (a rank is one pair's), so which of
// them pops first does not matter.
impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl Word {
    fn push(&mut self, id: u32, len: u32) {
        let n = self.symbols.len() as i32;
        self.symbols.push(Symbol {
            id,
            len,
            prev: n - 1,
            next: n + 1,
        });
    }

    fn add(&mut self, id: u32, len: u32) {
        self.flush_unk();
        self.push(id, len);
    }

    fn add_unk(&mut self, unk: u32, len: u32, fuse: bool) {
        match self.pending_unk {
            Some((id, l)) if fuse => self.pending_unk = Some((id, l + len)),
            Some((id, l)) => {
                self.push(id, l);
                self.pending_unk = Some((unk, len));
            }
            None => self.pending_unk = Some((unk, len)),
        }
    }

    fn flush_unk(&mut self) {
        if let Some((id, len)) = self.pending_unk.take() {
            self.push(id, len);
        }
    }

    fn merge_all(&mut self, merges: &Merges) {
        match self.symbols.len() {
            0 | 1 => {}
            n if n <= SHORT_WORD => self.merge_short(merges),
            _ => self.merge_heap(merges),
        }
    }

    /// HF's algorithm: a heap of candidate pairs, lowest (rank, position) first, stale entries
    /// skipped. O(n log n), so long pieces ("a" * 1_000_000) stay linear-ish.
    ///
    /// An entry keeps the pair it was queued for, and is stale when its position now holds
    /// another: told by the two ids, where HF looks the current pair up again and compares the
    /// merged ids (the same test: a symbol only grows, so its position never holds another pair
    /// that makes the same token). The merge table's probes are most of a first pass's time,
    /// and that one was a third of a long piece's (a fresh tokenizer's first pass over the 29
    /// MB corpus, where two-fifths of the distinct bytes are in pieces this long).
    fn merge_heap(&mut self, merges: &Merges) {
        let n = self.symbols.len();
        if n < 2 {
            return;
        }
        if let Some(last) = self.symbols.last_mut() {
            last.next = -1;
        }
        let mut queue = std::mem::take(&mut self.queue);
        queue.clear();
        queue.extend(self.symbols.windows(2).enumerate().filter_map(|(i, w)| {
            let (r, id) = merges.get(w[0].id, w[1].id)?;
            Some(Reverse(Candidate::new(r, i, w[0].id, w[1].id, id)))
        }));
        let mut heap = BinaryHeap::from(queue);
        while let Some(Reverse(c)) = heap.pop() {
            let pos = c.pos();
            let cur = self.symbols[pos];
            if cur.len == 0 || cur.next == -1 || cur.id != c.left {
                continue;
            }
            let next_pos = cur.next as usize;
            let right = self.symbols[next_pos];
            if right.id != c.right {
                continue;
            }
            self.symbols[pos].id = c.new;
            self.symbols[pos].len += right.len;
            self.symbols[pos].next = right.next;
            self.symbols[next_pos].len = 0;
            if right.next > -1 && (right.next as usize) < n {
                self.symbols[right.next as usize].prev = pos as i32;
            }
            let cur = self.symbols[pos];
            if cur.prev >= 0 {
                let p = cur.prev as usize;
                let left = self.symbols[p].id;
                if let Some((r, id)) = merges.get(left, cur.id) {
                    heap.push(Reverse(Candidate::new(r, p, left, cur.id, id)));
                }
            }
            if cur.next >= 0 && (cur.next as usize) < n {
                let right = self.symbols[cur.next as usize].id;
                if let Some((r, id)) = merges.get(cur.id, right) {
                    heap.push(Reverse(Candidate::new(r, pos, cur.id, right, id)));
                }
            }
        }
        let queue = heap.into_vec();
        // A pathological piece's heap ("a" * 1_000_000: 24 MB) is not kept by the thread.
        if queue.capacity() <= QUEUE_KEEP {
            self.queue = queue;
        }
    }

    /// Short words: scan for the lowest (rank, position) pair instead of keeping a heap. It makes
    /// the same choice at every step as `merge_all`'s heap (lowest rank, leftmost on ties), so the
    /// result is identical (`tests::short_and_heap_merges_agree` checks it); it is faster for the
    /// few symbols of a typical word.
    fn merge_short(&mut self, merges: &Merges) {
        // `SHIFT` spare slots past the word, so that a merge in a word of at most `SHIFT`
        // symbols moves the rest left by copies of a fixed length (vector moves), not four
        // `memmove` calls (those were 5% of a fresh tokenizer's first pass; the pass runs 4-5%
        // faster, `encode_file` with `FRESH=1`, alternating builds).
        let mut ids = [0u32; SHORT_WORD + SHIFT];
        let mut lens = [0u32; SHORT_WORD + SHIFT];
        let mut ranks = [u32::MAX; SHORT_WORD + SHIFT];
        let mut news = [0u32; SHORT_WORD + SHIFT];
        let mut n = self.symbols.len();
        for (i, s) in self.symbols.iter().enumerate() {
            ids[i] = s.id;
            lens[i] = s.len;
        }
        let pair = |a: u32, b: u32| merges.get(a, b).unwrap_or((u32::MAX, 0));
        for i in 0..n - 1 {
            (ranks[i], news[i]) = pair(ids[i], ids[i + 1]);
        }
        loop {
            let mut best = u32::MAX;
            let mut at = 0;
            for (i, &r) in ranks[..n - 1].iter().enumerate() {
                if r < best {
                    best = r;
                    at = i;
                }
            }
            if best == u32::MAX {
                break;
            }
            ids[at] = news[at];
            lens[at] += lens[at + 1];
            if n <= SHIFT {
                // What lands past the word's end is never read: the scan stops at `n - 1`.
                ids.copy_within(at + 2..at + 2 + SHIFT, at + 1);
                lens.copy_within(at + 2..at + 2 + SHIFT, at + 1);
                ranks.copy_within(at + 1..at + 1 + SHIFT, at);
                news.copy_within(at + 1..at + 1 + SHIFT, at);
            } else {
                ids.copy_within(at + 2..n, at + 1);
                lens.copy_within(at + 2..n, at + 1);
                ranks.copy_within(at + 1..n - 1, at);
                news.copy_within(at + 1..n - 1, at);
            }
            n -= 1;
            if n < 2 {
                break;
            }
            ranks[n - 1] = u32::MAX;
            if at > 0 {
                (ranks[at - 1], news[at - 1]) = pair(ids[at - 1], ids[at]);
            }
            if at + 1 < n {
                (ranks[at], news[at]) = pair(ids[at], ids[at + 1]);
            } else {
                ranks[at] = u32::MAX;
            }
        }
        self.symbols.clear();
        for i in 0..n {
            self.push(ids[i], lens[i]);
        }
    }

    fn emit(&self, out: &mut Vec<(u32, u32)>) {
        out.extend(
            self.symbols
                .iter()
                .filter(|s| s.len > 0)
                .map(|s| (s.id, s.len)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Bpe {
        let vocab: FxHashMap<String, u32> = ["a", "b", "c", "ab", "bc", "abc", "Ġ"]
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_string(), i as u32))
            .collect();
        let merges = vec![
            ("a".into(), "b".into()),
            ("ab".into(), "c".into()),
            ("b".into(), "c".into()),
        ];
        Bpe::new(vocab, &merges, BpeOptions::default()).unwrap()
    }

    #[test]
    fn merges_by_rank() {
        let bpe = toy();
        let mut out = vec![];
        bpe.tokenize_bytes(b"abcab", &mut out, &mut Scratch::default())
            .unwrap();
        assert_eq!(out, vec![(5, 3), (3, 2)]);
        out.clear();
        bpe.tokenize_bytes(b"bca", &mut out, &mut Scratch::default())
            .unwrap();
        assert_eq!(out, vec![(4, 2), (0, 1)]);
    }

    #[test]
    fn short_and_heap_merges_agree() {
        // A vocabulary over {a, b, c} where many merges compete, and random words of all sizes.
        let mut vocab: FxHashMap<String, u32> = FxHashMap::default();
        let mut merges = Vec::new();
        for t in ["a", "b", "c"] {
            vocab.insert(t.into(), vocab.len() as u32);
        }
        let mut seed = 7u64;
        let mut rnd = |m: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % m
        };
        let keys: Vec<String> = vocab.keys().cloned().collect();
        let mut all = keys;
        for _ in 0..60 {
            let (a, b) = (all[rnd(all.len())].clone(), all[rnd(all.len())].clone());
            let m = format!("{a}{b}");
            if m.len() > 12 || vocab.contains_key(&m) {
                continue;
            }
            vocab.insert(m.clone(), vocab.len() as u32);
            merges.push((a, b));
            all.push(m);
        }
        let bpe = Bpe::new(vocab, &merges, BpeOptions::default()).unwrap();
        for len in 1..120 {
            for _ in 0..20 {
                let word: Vec<u8> = (0..len).map(|_| b"abc"[rnd(3)]).collect();
                let mut w = Word::default();
                for &b in &word {
                    w.add(bpe.byte_ids[b as usize].unwrap(), 1);
                }
                let mut heap = Word {
                    symbols: w.symbols.clone(),
                    ..Word::default()
                };
                heap.merge_heap(&bpe.merges);
                w.merge_all(&bpe.merges);
                let (mut x, mut y) = (vec![], vec![]);
                heap.emit(&mut x);
                w.emit(&mut y);
                assert_eq!(x, y, "word {:?}", String::from_utf8_lossy(&word));
            }
        }
    }

    #[test]
    fn a_long_words_heap_is_not_kept() {
        let bpe = toy();
        let mut word = Word::default();
        for n in [100, QUEUE_KEEP * 2] {
            word.symbols.clear();
            for _ in 0..n {
                word.add(bpe.byte_ids[b'a' as usize].unwrap(), 1);
                word.add(bpe.byte_ids[b'b' as usize].unwrap(), 1);
            }
            word.merge_heap(&bpe.merges);
            let mut out = vec![];
            word.emit(&mut out);
            assert_eq!(out, vec![(3, 2); n], "every \"ab\" merged");
            if n == 100 {
                assert!(word.queue.capacity() >= 100, "a short heap is kept");
            } else {
                assert_eq!(word.queue.capacity(), 0, "a long heap is let go");
            }
        }
    }

    #[test]
    fn caches_of_a_few_models_live_side_by_side() {
        let mut s = Scratch::default();
        let models: Vec<ModelId> = (0..CACHED_MODELS).map(|_| ModelId::new()).collect();
        let token = |m: &ModelId| [(m.id as u32, 1)];
        for m in &models {
            s.cache_tokens(m, b"w", &token(m));
        }
        for m in &models {
            assert_eq!(s.cached_tokens(m, b"w"), Some(&token(m)[..]));
        }
        // A new model takes over the least recently used cache: the first model's.
        let new = ModelId::new();
        s.cache_tokens(&new, b"w", &token(&new));
        assert_eq!(
            s.cached_tokens(&models[1], b"w"),
            Some(&token(&models[1])[..])
        );
        assert_eq!(s.cached_tokens(&new, b"w"), Some(&token(&new)[..]));
        assert_eq!(s.cached_tokens(&models[0], b"w"), None);
        // A clone of a model shares its cache.
        let clone = models[1].clone();
        assert_eq!(s.cached_tokens(&clone, b"w"), Some(&token(&models[1])[..]));
    }

    /// Past its capacity the full cache starts over, and the hot cache in front of it keeps its
    /// pieces.
    #[test]
    fn a_full_cache_starts_over_and_leaves_the_hot_cache() {
        let mut s = Scratch::default();
        let m = ModelId::new();
        let (k0, k1) = bytesmap::split(b"hot");
        s.cache(&m).hot.put(3, k0, k1, &[(9, 3)]);
        let key = |i: usize| format!("piece {i}").into_bytes();
        for i in 0..CACHE_CAPACITY {
            s.cache_tokens(&m, &key(i), &[(i as u32, 1)]);
        }
        assert_eq!(s.cache(&m).map.len(), CACHE_CAPACITY);
        s.cache_tokens(&m, &key(CACHE_CAPACITY), &[(1, 1)]);
        assert_eq!(s.cached_tokens(&m, &key(0)), None);
        assert_eq!(
            s.cached_tokens(&m, &key(CACHE_CAPACITY)),
            Some(&[(1, 1)][..])
        );
        assert_eq!(s.cache(&m).map.len(), 1);
        let mut ids = vec![];
        assert!(s.cache(&m).hot.get_ids(3, k0, k1, &mut ids));
        assert_eq!(ids, [9]);
    }

    /// A model made after another was dropped takes its cache over, emptied: the first
    /// model's tokens for the same pieces are never served (hot, wide and full caches).
    #[test]
    fn a_dropped_models_cache_is_taken_over_empty() {
        let mut s = Scratch::default();
        let pieces: [&[u8]; 3] = [b"ab", b"a wide piece of twenty", &[b'x'; 40]];
        let first = ModelId::new();
        for (i, p) in pieces.iter().enumerate() {
            let tokens = [(i as u32, p.len() as u32)];
            let c = s.cache(&first);
            let (k0, k1) = bytesmap::split(p);
            match p.len() {
                0..=16 => c.hot.put(p.len(), k0, k1, &tokens),
                17..=WIDE_LEN => c.wide.put(p.len(), &wide_key(p), &tokens),
                _ => s.cache_tokens(&first, p, &tokens),
            }
        }
        let table = s.cache(&first).hot.bytes();
        drop(first);
        let second = ModelId::new();
        let c = s.cache(&second);
        let (k0, k1) = bytesmap::split(pieces[0]);
        assert!(!c.hot.get(2, k0, k1, &mut vec![]));
        assert!(!c
            .wide
            .get(pieces[1].len(), &wide_key(pieces[1]), &mut vec![]));
        assert_eq!(c.hot.bytes(), table, "the table is kept");
        assert_eq!(s.cached_tokens(&second, pieces[2]), None);
        assert_eq!(s.caches.len(), 1);
    }

    /// The caches of dropped models are released at the next switch of models (one of them
    /// taken over by a new model), not kept until other models take their places.
    #[test]
    fn caches_of_dropped_models_are_released() {
        let mut s = Scratch::default();
        let kept = ModelId::new();
        s.cache_tokens(&kept, b"w", &[(1, 1)]);
        for _ in 0..3 {
            let gone = ModelId::new();
            s.cache_tokens(&gone, b"w", &[(2, 1)]);
            assert_eq!(s.caches.len(), 2);
            drop(gone);
        }
        // The switch back releases the last one dropped; the live model's cache was kept.
        assert_eq!(s.cached_tokens(&kept, b"w"), Some(&[(1, 1)][..]));
        assert_eq!(s.caches.len(), 1);
        // A clone keeps a model alive.
        let model = ModelId::new();
        let clone = model.clone();
        s.cache_tokens(&model, b"w", &[(3, 1)]);
        drop(model);
        s.cache_tokens(&kept, b"v", &[(1, 1)]);
        assert_eq!(s.cached_tokens(&clone, b"w"), Some(&[(3, 1)][..]));
    }

    #[test]
    fn marker_parts_merge_like_the_whole_piece() {
        // A SentencePiece-like vocabulary: `▁` only in front of pieces, runs of `▁` allowed.
        let toks = [
            "▁", "a", "b", "▁a", "ab", "▁ab", "▁▁", "▁▁a", "ba", "▁b", "<unk>",
        ];
        let vocab: FxHashMap<String, u32> = toks
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_string(), i as u32))
            .collect();
        let merges: Vec<(String, String)> = [
            ("▁", "a"),
            ("a", "b"),
            ("▁", "▁"),
            ("▁a", "b"),
            ("▁▁", "a"),
            ("b", "a"),
            ("▁", "b"),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
        .collect();
        let opts = BpeOptions {
            unk_token: Some("<unk>".into()),
            fuse_unk: true,
            ..BpeOptions::default()
        };
        let bpe = Bpe::new(vocab.clone(), &merges, opts.clone()).unwrap();
        assert!(bpe.split_at_marker);
        // Without unk, "c" vanishes and its neighbours meet: no cutting.
        assert!(
            !Bpe::new(vocab.clone(), &merges, BpeOptions::default())
                .unwrap()
                .split_at_marker
        );
        let mut seed = 11u64;
        for _ in 0..2000 {
            let mut s = String::new();
            for _ in 0..(seed % 23) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                s.push(['▁', 'a', 'b', 'c'][(seed >> 33) as usize % 4]);
            }
            let (mut parts, mut whole) = (vec![], vec![]);
            bpe.tokenize_chars(&s, &mut parts, &mut Scratch::default())
                .unwrap();
            bpe.merge_chars(&s, &mut whole, &mut Scratch::default())
                .unwrap();
            assert_eq!(parts, whole, "{s}");
        }
        // A merge across the marker ("a" + "▁b") turns the cutting off.
        let mut v2 = vocab;
        v2.insert("a▁b".into(), 99);
        let mut m2 = merges;
        m2.push(("a".into(), "▁b".into()));
        assert!(
            !Bpe::new(v2, &m2, BpeOptions::default())
                .unwrap()
                .split_at_marker
        );
    }

    #[test]
    fn unknown_bytes_are_dropped_without_unk() {
        // As in HF: the unknown byte vanishes, its neighbours become adjacent and merge, and the
        // byte lengths (hence offsets) skip it.
        let bpe = toy();
        let mut out = vec![];
        bpe.tokenize_bytes(b"azb", &mut out, &mut Scratch::default())
            .unwrap();
        assert_eq!(out, vec![(3, 2)]);
    }
}
