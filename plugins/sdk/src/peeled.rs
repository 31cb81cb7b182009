//! Loops over lists that usually hold one item, with the first item handled before any loop.
//!
//! wasmtime checks its epoch (the per-call deadline) at every loop header the guest runs: a
//! load, a compare and a branch, plus the spills of a large function, ≈ 5 instructions each
//! time. A loop over one item runs its header twice (once more to find the end), and the
//! victim search's lists (a request's flavor-resources, a candidate's usage, the cells a
//! candidate took) hold one item on most shapes: at Kueue's large scale the guests' epoch
//! checks were 190 M of their 1.18 G instructions (BENCHMARKS.md, stop 48). Each function here
//! answers exactly as the plain loop would.

/// `items.iter().all(f)`: the first item tested before any loop, the rest only if there are
/// more.
#[inline(always)]
pub(crate) fn all<T>(items: &[T], mut f: impl FnMut(&T) -> bool) -> bool {
    match items {
        [] => true,
        [only] => f(only),
        [first, rest @ ..] => f(first) && rest.iter().all(f),
    }
}

/// `iter.for_each(f)`: the first item handed over before any loop, which is entered only when
/// the iterator's size hint does not rule out another item.
#[inline(always)]
pub(crate) fn for_each<I: Iterator>(mut iter: I, mut f: impl FnMut(I::Item)) {
    let Some(first) = iter.next() else {
        return;
    };
    f(first);
    if iter.size_hint().1 != Some(0) {
        iter.for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_answers_as_the_plain_loop_and_stops_at_the_first_false() {
        for len in 0..5usize {
            for mask in 0..(1u32 << len) {
                let items: Vec<bool> = (0..len).map(|k| mask & (1 << k) != 0).collect();
                let mut seen = Vec::new();
                let got = all(&items, |&b| {
                    seen.push(b);
                    b
                });
                let want = items.iter().all(|&b| b);
                assert_eq!(got, want, "{items:?}");
                let stop = items.iter().position(|&b| !b).map_or(len, |p| p + 1);
                assert_eq!(seen, items[..stop], "{items:?}");
            }
        }
    }

    #[test]
    fn for_each_hands_over_every_item_in_order() {
        for len in 0..5u32 {
            let mut seen = Vec::new();
            for_each(0..len, |k| seen.push(k));
            assert_eq!(seen, (0..len).collect::<Vec<_>>());
            // An iterator whose size hint says nothing.
            let mut seen = Vec::new();
            for_each((0..len).filter(|_| true), |k| seen.push(k));
            assert_eq!(seen, (0..len).collect::<Vec<_>>());
        }
    }
}
