//! Usage as a range of two flat lists given by offsets (the instance's table of admitted
//! workloads keeps its rows' quota so).

use crate::types::FrAmount;

/// Entry `i`'s usage, from offsets with `len + 1` entries, non-decreasing and within the
/// lists.
#[inline(always)]
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
