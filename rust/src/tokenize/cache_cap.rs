//! The user's cap on each thread's byte-level BPE caches (per model: the hot and wide piece
//! caches, their token pools, and the full cache). Left unset, they grow to their built-in
//! sizes, up to ~90 MiB a thread and model on text of many distinct pieces; a process of many
//! threads (or little memory) sets a cap with `FASTPREP_TOKEN_CACHE_MB` (read once, at the
//! first cache use) or `set_cap_bytes`. A smaller cache only misses more: ids never change.
//!
//! The cap is shared out as: hot table 1/4, wide table 1/8, each pool 1/32 of tokens held, the
//! full cache up to cap/512 pieces (its table, at up to three slots of ~33 bytes a piece, under
//! 1/5) and 1/16 of tokens held. Vectors may take twice what they hold, so all of it stays
//! under ~0.85 of the cap.
//! It bounds caches as they grow; a table already larger keeps its size until its model is
//! dropped (a new tokenizer, or a new thread, starts within the cap).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

/// No cap.
const UNSET: usize = usize::MAX;
static CAP: AtomicUsize = AtomicUsize::new(UNSET);
static FROM_ENV: Once = Once::new();

/// The environment variable holding the cap in MiB (a number; unset or empty: no cap).
pub const ENV_VAR: &str = "FASTPREP_TOKEN_CACHE_MB";

fn read_env() {
    FROM_ENV.call_once(|| {
        let mb = std::env::var(ENV_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok());
        if let Some(mb) = mb.filter(|mb| mb.is_finite() && *mb >= 0.0) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            CAP.store((mb * 1024.0 * 1024.0) as usize, Ordering::Relaxed);
        }
    });
}

/// The cap in bytes, if one is set.
pub fn cap_bytes() -> Option<usize> {
    read_env();
    match CAP.load(Ordering::Relaxed) {
        UNSET => None,
        b => Some(b),
    }
}

/// Sets the cap (`None`: none); it overrides the environment variable.
pub fn set_cap_bytes(bytes: Option<usize>) {
    read_env();
    let stored = bytes.map_or(UNSET, |b| b.min(UNSET - 1));
    CAP.store(stored, Ordering::Relaxed);
}

/// The largest power of two of `unit`-byte items fitting in `1/share` of `cap` (at least
/// `min`, so a tiny cap still leaves a working cache; at most `max`).
fn sets_within(cap: usize, max: usize, unit: usize, share: usize, min: usize) -> usize {
    let n = cap / share / unit;
    let pow = if n == 0 { 1 } else { 1 << n.ilog2() };
    pow.max(min).min(max)
}

/// `limit(cap)` under a cap, else `max`.
fn capped(max: usize, limit: impl FnOnce(usize) -> usize) -> usize {
    cap_bytes().map_or(max, limit)
}

/// Most sets of the hot table (64-byte sets).
pub(crate) fn hot_sets(max: usize) -> usize {
    capped(max, |cap| sets_within(cap, max, 64, 4, 16))
}

/// Most sets of the wide table (128-byte sets).
pub(crate) fn wide_sets(max: usize) -> usize {
    capped(max, |cap| sets_within(cap, max, 128, 8, 16))
}

/// Most tokens of a pool (8 bytes each).
pub(crate) fn pool_tokens(max: usize) -> usize {
    capped(max, |cap| (cap / 32 / 8).max(64).min(max))
}

/// Most pieces of the full cache (up to ~100 bytes each in its table).
pub(crate) fn full_pieces(max: usize) -> usize {
    capped(max, |cap| (cap / 512).max(16).min(max))
}

/// Most tokens the full cache keeps (8 bytes each).
pub(crate) fn full_tokens(max: usize) -> usize {
    capped(max, |cap| (cap / 16 / 8).max(256).min(max))
}

#[cfg(test)]
mod tests {
    use super::sets_within;

    #[test]
    fn sets_are_a_power_of_two_within_the_share() {
        const MIB: usize = 1 << 20;
        // 1 MiB, a quarter of it in 64-byte sets: 4096.
        assert_eq!(sets_within(MIB, 1 << 19, 64, 4, 16), 4096);
        // Not a power of two: rounded down.
        assert_eq!(sets_within(3 * MIB, 1 << 19, 64, 4, 16), 8192);
        // Tiny and huge caps: the floor and the built-in size.
        assert_eq!(sets_within(0, 1 << 19, 64, 4, 16), 16);
        assert_eq!(sets_within(1 << 40, 1 << 19, 64, 4, 16), 1 << 19);
    }
}
