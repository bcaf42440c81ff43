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
//! The local rules are bit operations on the block's 64-bit masks, with a bit or three carried
//! in from the blocks either side. Of the four that reach further, the two frequent ones (the
//! NL an O run takes, the last NL of a white-space run: once a line or so) are settled by one
//! 128-bit addition each over the block and the next, whose carry lands on the byte after a
//! run; long runs of ASCII digits by hops of `max_digits` bytes over the same two blocks;
//! contractions, wider digits and runs that go on past the next block take a scalar look at
//! each candidate (`fix_up`; it was 11% of the split when it took all four).
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
    let none = Block::default();
    let mut foc = 0;
    for k in 0..nblocks {
        let prv = if k > 0 { &blocks[k - 1] } else { &none };
        let nxt = blocks.get(k + 1).unwrap_or(&none);
        let found = block_starts(prv, &blocks[k], nxt, foc, max_digits);
        foc = found.foc;
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

/// The piece starts of block `cur` by the local rules, and the candidates `fix_up` decides,
/// given the blocks before and after it (`Block::default()` past the text) and `carry_foc`, the
/// block before's `BlockStarts::foc`.
///
/// The masks are one word each; a rule's look at the byte before or after crosses into the
/// neighbour's word through one bit (`p1`, `n1`). The rarer rules that reach further (long digit
/// runs, the two additions) work on the block and the next as one 128-bit word. (It was all
/// 128-bit windows over three blocks: twice the instructions, and this function a tenth of the
/// Rust core's time.)
#[allow(clippy::inline_always)] // once per block, in `segment`'s loop
#[inline(always)]
fn block_starts(
    prv: &Block,
    cur: &Block,
    nxt: &Block,
    carry_foc: u64,
    max_digits: usize,
) -> BlockStarts {
    // Byte i of `p1(m, before)` is byte i - 1 of `m`, bit 0 taken from the block before's bit
    // 63; of `n1(m, after)`, byte i + 1.
    let p1 = |m: u64, before: u64| (m << 1) | (before >> 63);
    let n1 = |m: u64, after: u64| (m >> 1) | (after << 63);
    // Two blocks as one word: `cur` low, `nxt` high.
    let wide = |m: u64, after: u64| u128::from(m) | (u128::from(after) << 64);
    let Block {
        l,
        n,
        s,
        o,
        nl,
        sp,
        ap,
        cont,
    } = *cur;
    let valid = l | n | s | o;
    let valid_n = nxt.l | nxt.n | nxt.s | nxt.o;
    let lead = valid & !cont;
    let sx = s & !nl;
    let o_before = p1(o, prv.o);
    // Free O: the first of a run of O, with no space before it. Spread over the bytes of its
    // char, so a letter right after such a one-char run sees it in the byte before. (Both
    // spreads below are no-ops where the bytes are ASCII, most blocks of most texts: skipped
    // there.)
    let free_o = o & !o_before & !p1(sp, prv.sp);
    let mut foc = free_o;
    if cont != 0 {
        for _ in 0..3 {
            foc |= p1(foc, carry_foc) & cont;
        }
    }
    let letters = l & !p1(l, prv.l) & !p1(sx, prv.s & !prv.nl) & !p1(foc, carry_foc);
    let digits = if max_digits == 1 {
        n & lead
    } else {
        n & !p1(n, prv.n)
    };
    let run_s = s & !p1(s, prv.s);
    let space_first = run_s & !(o_before & nl);
    // The last char of a white-space run that more text follows, if not a NL: found at its last
    // byte, then moved back to its first (which may be in this block when the last is in the
    // next).
    let last = |s: u64, s_after: u64, valid: u64, valid_after: u64, nl: u64| {
        s & !n1(s, s_after) & n1(valid, valid_after) & !nl
    };
    let mut space_last = last(s, nxt.s, valid, valid_n, nl);
    if cont | (nxt.cont & 7) != 0 {
        // The next block's, right in its first bytes (all that can move back into this one).
        let mut after = last(nxt.s, 0, valid_n, 0, nxt.nl);
        let lead_n = valid_n & !nxt.cont;
        for _ in 0..3 {
            space_last = (space_last & lead) | n1(space_last & cont, after & nxt.cont);
            after = (after & lead_n) | ((after & nxt.cont) >> 1);
        }
    }
    let mut starts = letters | free_o | digits | space_first | space_last;
    let mut special = ap & free_o & n1(l, nxt.l);
    let mut next_block = 0;
    if max_digits > 1 {
        let (found, found_next, left) = long_digit_runs(digits, cur, nxt, max_digits);
        starts |= found;
        next_block |= found_next;
        special |= left;
    }
    // The block's own candidates of the two frequent rules that look past a byte or two; each
    // is settled here by one addition (a run's carry lands on the byte after it) unless a run
    // goes on past the next block, and then by `fix_up`.
    // SX after a NL: a start if its run of SX does not end at a NL.
    let after_nl = sx & lead & p1(nl, prv.nl);
    if after_nl != 0 {
        let sxx = wide(sx, nxt.s & !nxt.nl);
        let (sum, out) = sxx.overflowing_add(u128::from(after_nl));
        if out || sum & !sxx & wide(nl, nxt.nl) != 0 {
            special |= after_nl;
        } else {
            starts |= after_nl;
        }
    }
    // NL right after an O: the O run's piece takes the run of NL; white space after it starts
    // a piece (in this block or the next).
    let absorbed = nl & run_s & o_before;
    if absorbed != 0 {
        let nll = wide(nl, nxt.nl);
        let (sum, out) = nll.overflowing_add(u128::from(absorbed));
        if out {
            special |= absorbed;
        } else {
            let landed = sum & !nll & wide(s, nxt.s);
            starts |= landed as u64;
            next_block |= (landed >> 64) as u64;
        }
    }
    BlockStarts {
        starts,
        next_block,
        special,
        foc,
    }
}

/// Runs of more than `max_digits` digits starting in block `cur`: a piece every `max_digits`
/// digits. Of ASCII digits, found for this block and the next at once, hopping `max_digits`
/// bytes from each run's start while the run goes on; a run that goes on past the next block,
/// and runs of wider digits, are left to `fix_up` (which walked every such run, 5% of the split
/// on the test corpus with its long numbers). `run_starts` are the block's digit-run starts.
/// Returns the starts in this block and the next, and the runs left.
#[allow(clippy::inline_always)] // once per block, in `segment`'s loop
#[inline(always)]
fn long_digit_runs(
    run_starts: u64,
    cur: &Block,
    nxt: &Block,
    max_digits: usize,
) -> (u64, u64, u64) {
    let nn = u128::from(cur.n) | (u128::from(nxt.n) << 64);
    let long_digits = run_starts & (nn >> max_digits) as u64;
    if long_digits == 0 {
        return (0, 0, 0);
    }
    if cur.n & cur.cont | nxt.n & nxt.cont != 0 {
        return (0, 0, long_digits);
    }
    // Bit q: q and the `max_digits - 1` bytes before it are digits (a hop lands at least
    // `max_digits` bytes past its run's start, so this never looks before the block).
    let mut whole = nn;
    for j in 1..max_digits {
        whole &= nn << j;
    }
    let (mut hop, mut found) = (u128::from(long_digits), 0);
    loop {
        hop = (hop << max_digits) & whole;
        if hop == 0 {
            break;
        }
        found |= hop;
    }
    // The run that reaches the end of the next block, if it starts in this one.
    let top = (!nn).leading_zeros();
    let left = if top > 64 && long_digits >> (128 - top) & 1 != 0 {
        1 << (128 - top)
    } else {
        0
    };
    (found as u64, (found >> 64) as u64, left)
}

/// `block_starts`' answer: the block's piece starts, starts it found in the next block, the
/// candidates left to `fix_up`, and the block's free-O chars (for the next block's rules).
struct BlockStarts {
    starts: u64,
    next_block: u64,
    special: u64,
    foc: u64,
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

    /// The runs that reach past a byte or two, at every length and offset against the
    /// blocks: NL after an O, then white space; SX after a NL, ending at a NL or not; digits.
    #[test]
    fn runs_that_reach_past_their_block() {
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
            // The last char of a white-space run, wider than a byte, across a block's end (in
            // ASCII blocks otherwise).
            for text in [
                format!("{p} \u{3000}x"),
                format!("{p}\u{3000}\u{3000}x"),
                format!("{p}  \u{a0}x"),
                format!("{p}\u{2003}.\u{3000}1"),
            ] {
                both(&text, 3);
            }
            // Runs of digits (hopped over two blocks, or left to `fix_up`), ASCII and with a
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
