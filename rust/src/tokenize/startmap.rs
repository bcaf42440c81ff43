//! cl100k's pre-tokenization (and Qwen2's) as a bitmap of piece starts, computed 64 bytes at a
//! time with whole-word bit operations, then walked with `trailing_zeros`.
//!
//! Why: `fastsplit`'s matcher decides each piece's end with a few branches on the classes around
//! it, and pieces (4-5 bytes on average) alternate between kinds at random, so those branches
//! mispredict about once a piece; that made the splitter a third of the cl100k encode. Here the
//! classes of a block become its piece starts with no branch per piece. The rules are derived
//! from the pattern's alternatives, tried leftmost-first at a piece start:
//!
//! `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//! \s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! With L letters, N digits, S white space (NL its `\r`/`\n`, SX the rest) and O everything else
//! (classes as `fastsplit` reads them off Oniguruma), a char starts a piece when it is:
//! - the first letter of a run of letters, unless the char before it is SX, or a "free" O: an O
//!   that starts its piece alone (that char is then the run's one-char prefix);
//! - the first O of a run of O, unless a space (0x20) is right before it (` ?` takes the space
//!   into the O run's piece). Such an O is "free";
//! - the first digit of a run, and every `max_digits`-th after it;
//! - the first char of a run of white space, unless the run follows an O and begins with NL (the
//!   O run's `[\r\n]*` takes those NL; the first SX after them starts the rest);
//! - in a run of white space: the first SX after its last NL (`\s*[\r\n]+` ends at that NL), and
//!   its last char when that is SX and more text follows (`\s+(?!\S)` backs off one char, which
//!   then starts the next piece, or is a prefix of it);
//! - after a free apostrophe's contraction, the next letter (`'sa` is `'s`, `a`).
//!
//! The local rules are bit operations over a 128-bit window (the block with 32 bytes each side).
//! Of the four that reach further, the two frequent ones (the NL an O run takes, the last NL of
//! a white-space run: once a line or so) are settled by one addition each, whose carry lands on
//! the byte after a run; long runs of ASCII digits by hops of `max_digits` bytes over the
//! window; contractions, wider digits and runs that leave the window take a scalar look at each
//! candidate (`fix_up`; it was 11% of the split when it took all four).
//! `tests::agrees_with_the_matcher` checks every split against `fastsplit`'s matcher (itself
//! checked against Oniguruma), on random text of the tricky chars and across blocks.
#[cfg(target_arch = "x86_64")]
use super::blockmasks::Kernel;
use super::fastsplit::{contraction, utf8_width, BlockClasses};
use super::long_text::safe_cut;
use std::cell::RefCell;

/// Texts are split in segments of about this many bytes (cut where no piece can cross, see
/// `next_cut`), so the masks of one stay in the L1/L2 cache however long the text.
const SEGMENT: usize = 16 * 1024;

/// The classes of one 64-byte block (bit i: byte i), as `BlockClasses` gives them, plus the
/// bytes the rules test one by one.
#[derive(Clone, Copy, Default)]
struct Block {
    l: u64,
    n: u64,
    s: u64,
    o: u64,
    /// `\r` or `\n`.
    nl: u64,
    /// `' '`.
    sp: u64,
    /// `'`.
    ap: u64,
    /// UTF-8 continuation bytes.
    cont: u64,
}

#[derive(Default)]
struct Buffers {
    blocks: Vec<Block>,
    starts: Vec<u64>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
}

/// Calls `f(start, end)` for every match of the cl100k-family pattern in `text`, in order
/// (`max_digits`: 3 for cl100k, 1 for Qwen2).
pub(super) fn for_each(text: &str, max_digits: usize, mut f: impl FnMut(usize, usize)) {
    if text.is_empty() {
        return;
    }
    let mut run = |bufs: &mut Buffers| {
        let b = text.as_bytes();
        let mut start = 0;
        while start < b.len() {
            let end = next_cut(b, start + SEGMENT).unwrap_or(b.len());
            let seg = &text[start..end];
            segment(seg, max_digits, bufs);
            emit(&bufs.starts, seg.len(), |s, e| f(start + s, start + e));
            start = end;
        }
    };
    BUFFERS.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bufs) => {
            run(&mut bufs);
            // A text with no place to cut for long was one segment: its masks are not kept.
            if bufs.blocks.capacity() > 4 * SEGMENT / 64 {
                *bufs = Buffers::default();
            }
        }
        // Re-entered (a callback that splits again): buffers of its own.
        Err(_) => run(&mut Buffers::default()),
    });
}

/// The first place at or after `from` where the text may be cut with no piece crossing it and
/// no piece after it depending on the text before: after a `\n` before an ASCII char that is
/// not white space (that char always starts a piece: a letter, digit or O right after a NL has
/// no prefix), or after an ASCII letter before white space (the white space starts a piece,
/// with nothing before it to take its NL). Every rule's look back stops at such a char
/// (`long_text` cuts at the same places).
fn next_cut(b: &[u8], from: usize) -> Option<usize> {
    (from.max(1)..b.len()).find(|&p| safe_cut(b, p, true))
}

/// Fills `bufs.starts` with the piece starts of `text` (bit i of word i / 64: byte i).
fn segment(text: &str, max_digits: usize, bufs: &mut Buffers) {
    let nblocks = text.len().div_ceil(64);
    let blocks = &mut bufs.blocks;
    blocks.clear();
    classify(text, blocks);
    let starts = &mut bufs.starts;
    starts.clear();
    starts.resize(nblocks, 0);
    for k in 0..nblocks {
        let found = block_starts(blocks, k, max_digits);
        starts[k] |= found.starts;
        if let Some(next) = starts.get_mut(k + 1) {
            *next |= found.next_block;
        }
        let mut sp = found.special;
        while sp != 0 {
            let i = k * 64 + sp.trailing_zeros() as usize;
            sp &= sp - 1;
            fix_up(text, blocks, starts, i, max_digits);
        }
    }
}

/// Pushes the masks of each block of `text` onto `blocks`.
fn classify(text: &str, blocks: &mut Vec<Block>) {
    let classes = BlockClasses::new(text);
    #[cfg(target_arch = "x86_64")]
    if classes.kernel() == Kernel::Avx2 {
        // SAFETY: the kernel is AVX2 only on a CPU that has it.
        return unsafe { classify_avx2(classes, text.len(), blocks) };
    }
    classify_with(classes, text.len(), blocks);
}

/// `classify_with` compiled for AVX2, so that the kernel's masks inline into its loop: a
/// `target_feature` function is not inlined into one without the feature, and the call per
/// block returned its masks through memory.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn classify_avx2(classes: BlockClasses<'_>, len: usize, blocks: &mut Vec<Block>) {
    classify_with(classes, len, blocks);
}

#[allow(clippy::inline_always)] // the body of both `classify` variants
#[inline(always)]
fn classify_with(mut classes: BlockClasses<'_>, len: usize, blocks: &mut Vec<Block>) {
    for k in 0..len.div_ceil(64) {
        let ([l, n, s, o], bytes) = classes.block(k * 64);
        blocks.push(Block {
            l,
            n,
            s,
            o,
            nl: bytes.nl,
            sp: bytes.sp,
            ap: bytes.ap,
            cont: bytes.cont,
        });
    }
}

/// Bit `i` of mask `m` of the byte at `i` (false past the text).
#[inline]
fn has(blocks: &[Block], m: impl Fn(&Block) -> u64, i: usize) -> bool {
    blocks
        .get(i / 64)
        .is_some_and(|bl| m(bl) >> (i % 64) & 1 != 0)
}

#[inline]
fn set(starts: &mut [u64], i: usize) {
    starts[i / 64] |= 1 << (i % 64);
}

/// The scalar rules, at a candidate `i` that `block_starts` flagged: which of the four it is,
/// told by the byte and the masks there.
#[cold]
fn fix_up(text: &str, blocks: &[Block], starts: &mut [u64], i: usize, max_digits: usize) {
    let b = text.as_bytes();
    let is_nl = |j: usize| matches!(b[j], b'\r' | b'\n');
    let cls = |m: fn(&Block) -> u64, j: usize| has(blocks, m, j);
    match b[i] {
        b'\r' | b'\n' => {
            // A run of white space that begins with NL right after an O: the O run's piece
            // takes the NL; what follows them, if white space, starts the run's next piece.
            let mut e = i;
            while e < b.len() && is_nl(e) {
                e += 1;
            }
            if e < b.len() && cls(|x| x.s, e) {
                set(starts, e);
            }
        }
        b'\'' => {
            // A free apostrophe before letters: after its contraction, the letters go on as a
            // new piece.
            if let Some(k) = contraction(text, i + 1, true) {
                let q = i + 1 + k;
                if q < b.len() && cls(|x| x.l, q) {
                    set(starts, q);
                }
            }
        }
        _ if cls(|x| x.n, i) => {
            // A run of digits: a piece every `max_digits` chars.
            let (mut pos, mut count) = (i, 0);
            while pos < b.len() && cls(|x| x.n, pos) {
                if count > 0 && count % max_digits == 0 {
                    set(starts, pos);
                }
                pos += utf8_width(b[pos]);
                count += 1;
            }
        }
        _ => {
            // SX right after a NL: it starts a piece if no NL comes later in its run of white
            // space (`\s*[\r\n]+` ends at the run's last NL).
            let mut e = i;
            while e < b.len() && cls(|x| x.s, e) && !is_nl(e) {
                e += 1;
            }
            if e == b.len() || !is_nl(e) {
                set(starts, i);
            }
        }
    }
}

/// Block `k`'s piece starts by the local rules, and the candidates `fix_up` decides.
#[inline]
fn block_starts(blocks: &[Block], k: usize, max_digits: usize) -> BlockStarts {
    // The block in bits 32..96 of a 128-bit window, 32 bytes of its neighbours each side (the
    // local rules look at most 8 bytes away); bytes outside the text are in no mask.
    let win = |m: fn(&Block) -> u64| -> u128 {
        let before = if k > 0 { m(&blocks[k - 1]) } else { 0 };
        let after = blocks.get(k + 1).map_or(0, m);
        u128::from(before >> 32) | (u128::from(m(&blocks[k])) << 32) | (u128::from(after) << 96)
    };
    let (l, n, s, o) = (win(|b| b.l), win(|b| b.n), win(|b| b.s), win(|b| b.o));
    let (nl, sp, ap, cont) = (win(|b| b.nl), win(|b| b.sp), win(|b| b.ap), win(|b| b.cont));
    // Byte i of `prev(m)` is byte i - 1 of `m`; of `next(m)`, byte i + 1.
    let prev = |m: u128| m << 1;
    let next = |m: u128| m >> 1;
    let valid = l | n | s | o;
    let lead = valid & !cont;
    let sx = s & !nl;
    // Free O: the first of a run of O, with no space before it. Spread over the bytes of its
    // char, so a letter right after such a one-char run sees it in the byte before.
    let free_o = o & !prev(o) & !prev(sp);
    // (Both spreads are no-ops where the window is ASCII, most of a block's windows in most
    // texts: skipped there.)
    let mut free_o_char = free_o;
    if cont != 0 {
        for _ in 0..3 {
            free_o_char |= prev(free_o_char) & cont;
        }
    }
    let letters = l & !prev(l) & !prev(sx) & !prev(free_o_char);
    let digits = if max_digits == 1 {
        n & lead
    } else {
        n & !prev(n)
    };
    let run_s = s & !prev(s);
    let space_first = run_s & !(prev(o) & nl);
    // The last char of a white-space run that more text follows, if not a NL: found at its last
    // byte, then moved back to its first.
    let mut space_last = s & !next(s) & next(valid) & !nl;
    if cont != 0 {
        for _ in 0..3 {
            space_last = (space_last & lead) | next(space_last & cont);
        }
    }
    let mut starts = letters | free_o | digits | space_first | space_last;
    let mut special = ap & free_o & next(l);
    let mut next_block = 0;
    const MID: u128 = (u64::MAX as u128) << 32;
    // Runs of more than `max_digits` digits starting in the block: a piece every `max_digits`
    // digits. Of ASCII digits, found for the whole window at once, hopping `max_digits` bytes
    // from each run's start while the run goes on; a run that leaves the window, and runs of
    // wider digits, by `fix_up` (which walked every such run, 5% of the split on the test corpus
    // with its long numbers).
    let long_digits = if max_digits == 1 {
        0
    } else {
        n & !prev(n) & (n >> max_digits) & MID
    };
    if long_digits != 0 {
        if n & cont == 0 {
            // Bit q: q and the `max_digits - 1` bytes before it are digits.
            let mut whole = n;
            for j in 1..max_digits {
                whole &= n << j;
            }
            let (mut hop, mut found) = (long_digits, 0);
            loop {
                hop = (hop << max_digits) & whole;
                if hop == 0 {
                    break;
                }
                found |= hop;
            }
            starts |= found;
            next_block |= (found >> 96) as u64;
            let top = (!n).leading_zeros();
            if (32..96).contains(&(128 - top)) {
                special |= 1 << (128 - top);
            }
        } else {
            special |= long_digits;
        }
    }
    // The block's own candidates of the two frequent rules that look past the window's few
    // bytes; each rule is settled here by one addition (a run's carry lands on the byte after
    // it) unless a run leaves the window, and then by `fix_up`.
    // SX after a NL: a start if its run of SX does not end at a NL.
    let after_nl = sx & lead & prev(nl) & MID;
    let (sum, out) = sx.overflowing_add(after_nl);
    if out || sum & !sx & nl != 0 {
        special |= after_nl;
    } else {
        starts |= after_nl;
    }
    // NL right after an O: the O run's piece takes the run of NL; white space after it starts
    // a piece (in this block or the next).
    let absorbed = nl & run_s & prev(o) & MID;
    let (sum, out) = nl.overflowing_add(absorbed);
    if out {
        special |= absorbed;
    } else {
        let landed = sum & !nl & s;
        starts |= landed;
        next_block |= (landed >> 96) as u64;
    }
    BlockStarts {
        starts: (starts >> 32) as u64,
        next_block,
        special: (special >> 32) as u64,
    }
}

/// `block_starts`' answer: the block's piece starts, starts it found in the next block, and the
/// candidates left to `fix_up`.
struct BlockStarts {
    starts: u64,
    next_block: u64,
    special: u64,
}

/// Calls `f(start, end)` for each piece: from each start to the next (the last to `len`).
#[inline]
fn emit(starts: &[u64], len: usize, mut f: impl FnMut(usize, usize)) {
    let mut prev = usize::MAX;
    for (k, &word) in starts.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let i = k * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if prev != usize::MAX {
                f(prev, i);
            }
            prev = i;
        }
    }
    if prev != usize::MAX {
        f(prev, len);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fastsplit::{tests::random_text, Known};
    use super::*;

    fn both(text: &str, max_digits: usize) {
        let mut want = Vec::new();
        Known::Cl100k { max_digits }.find_iter_scalar(text, &mut want);
        let mut got = Vec::new();
        for_each(text, max_digits, |s, e| got.push((s, e)));
        assert_eq!(got, want, "{text:?}");
    }

    #[test]
    fn agrees_with_the_matcher() {
        for (cases, max_len) in [(30_000, 24), (4_000, 200), (300, 3000)] {
            for seed in 0..cases {
                let text = random_text(seed, max_len);
                both(&text, 3);
                both(&text, 1);
            }
        }
    }

    /// The runs that reach past the window's few bytes, at every length and offset against the
    /// blocks: NL after an O, then white space; SX after a NL, ending at a NL or not; digits.
    #[test]
    fn runs_that_leave_the_window() {
        for pad in 0..70 {
            let p = "b".repeat(pad);
            for n in [1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 100, 200] {
                let (nls, sps) = ("\n".repeat(n), " ".repeat(n));
                for text in [
                    format!("{p}.{nls}  x"),
                    format!("{p}.{nls}\u{3000}x"),
                    format!("{p}.{nls}"),
                    format!("{p}\n{sps}\nx"),
                    format!("{p}\n{sps}x"),
                    format!("{p}\n{sps}"),
                    format!("{p}\r\n{sps}\r\n {sps}.\n\n\t"),
                ] {
                    both(&text, 3);
                }
            }
            // Runs of digits (hopped over in the window, or left to `fix_up`), ASCII and with a
            // wider digit (U+0661) in them, after a letter, an O or white space.
            for n in (1..=70).chain([95, 96, 97, 127, 128, 129, 200]) {
                let d = "0123456789".repeat(n / 10 + 1)[..n].to_owned();
                for text in [
                    format!("{p}{d}x"),
                    format!("{p}.{d}"),
                    format!("{p} {d}\n{d}"),
                    format!("{p}{d}\u{661}{d}.."),
                    format!("{p}\u{661}{d}"),
                ] {
                    both(&text, 3);
                    both(&text, 1);
                }
            }
        }
    }

    /// Texts of several segments: cut after a NL before an ASCII char, runs across the cut.
    #[test]
    fn agrees_across_segments() {
        for seed in 0..40 {
            let mut text = String::new();
            while text.len() < 3 * SEGMENT {
                text.push_str(&random_text(seed * 1000 + text.len() as u64, 400));
                text.push_str(
                    ["\n", "\nx", "\n1", "\n.", "\n  ", ".\n\n'", "\n's"][text.len() % 7],
                );
            }
            both(&text, 3);
            both(&text, 1);
        }
        // Cut only after a letter before white space; and nowhere (one segment).
        let words = "ab 12  'll\t x. ".repeat(3 * SEGMENT / 16);
        both(&words, 3);
        both(&format!("{}9 'S", "é.".repeat(2 * SEGMENT)), 3);
    }
}
