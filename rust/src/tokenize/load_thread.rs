//! Two parts of a tokenizer's load side by side, on the caller's thread and a helper.

/// Runs `other` on a scoped helper thread (named `fastprep-load`) while `here` runs on the
/// caller's, and returns both results. Both run here when `parallel` is false or the thread
/// cannot be started; a panic on the helper is raised again here.
pub(crate) fn side_by_side<A: Send, B>(
    parallel: bool,
    other: impl Fn() -> A + Sync,
    here: impl FnOnce() -> B,
) -> (A, B) {
    if !parallel {
        return (other(), here());
    }
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("fastprep-load".into())
            .spawn_scoped(s, &other);
        let b = here();
        let a = match helper {
            Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
            Err(_) => other(),
        };
        (a, b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_results_come_back_either_way() {
        for parallel in [false, true] {
            let (a, b) = side_by_side(
                parallel,
                || std::thread::current().name().map(String::from),
                || 2,
            );
            assert_eq!(b, 2);
            assert_eq!(a.as_deref() == Some("fastprep-load"), parallel);
        }
    }

    #[test]
    #[should_panic(expected = "helper failed")]
    fn a_panic_on_the_helper_is_raised_here() {
        side_by_side(true, || -> u8 { panic!("helper failed") }, || ());
    }
}
