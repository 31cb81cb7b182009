//! What the host's column layouts (`record candidates`, `record heads`) share: each entry's
//! usage is a range of two flat lists, given by offsets.

use crate::types::FrAmount;

/// Makes the usage columns of `n` entries safe to index: `frs` and `amounts` are cut to the same
/// length, and `offsets` gets `n + 1` entries, non-decreasing and within it (missing ones point
/// at the end). Entry `i` then owns `offsets[i]..offsets[i + 1]`. The host never sends them
/// otherwise; a plugin must not trap if it did.
pub(crate) fn normalize_usage(
    offsets: &mut Vec<u32>,
    frs: &mut Vec<u32>,
    amounts: &mut Vec<i64>,
    n: usize,
) {
    let entries = frs.len().min(amounts.len());
    frs.truncate(entries);
    amounts.truncate(entries);
    offsets.resize(n + 1, entries as u32);
    let mut floor = 0;
    for o in offsets.iter_mut() {
        *o = (*o).clamp(floor, entries as u32);
        floor = *o;
    }
}

/// Entry `i`'s usage, from columns made safe by [`normalize_usage`].
#[inline]
pub(crate) fn usage_of<'a>(
    offsets: &[u32],
    frs: &'a [u32],
    amounts: &'a [i64],
    i: usize,
) -> impl Iterator<Item = FrAmount> + 'a {
    let range = offsets[i] as usize..offsets[i + 1] as usize;
    frs[range.clone()]
        .iter()
        .zip(&amounts[range])
        .map(|(&fr, &amount)| FrAmount { fr, amount })
}
