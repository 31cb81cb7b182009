//! Per-leaf values of one domain tree (usage, free capacity), one row of resource columns per
//! leaf, stored flat: a cycle's snapshot or a placement request copies one vector per flavor,
//! not one per leaf.

/// One row of `columns` values per leaf, leaf `l`'s at `l * columns ..`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafTable {
    columns: usize,
    values: Vec<i64>,
}

impl LeafTable {
    /// `leaves` rows of `columns` zeros.
    pub fn zeroed(leaves: usize, columns: usize) -> LeafTable {
        LeafTable {
            columns,
            values: vec![0; leaves * columns],
        }
    }

    /// How many leaves (rows) the table has.
    pub fn leaves(&self) -> usize {
        self.values.len().checked_div(self.columns).unwrap_or(0)
    }

    /// A leaf's row.
    pub fn row(&self, leaf: usize) -> &[i64] {
        &self.values[leaf * self.columns..(leaf + 1) * self.columns]
    }

    /// A leaf's row, to change.
    pub fn row_mut(&mut self, leaf: usize) -> &mut [i64] {
        &mut self.values[leaf * self.columns..(leaf + 1) * self.columns]
    }

    /// Every row, in leaf order.
    pub fn rows(&self) -> impl Iterator<Item = &[i64]> {
        (0..self.leaves()).map(|l| self.row(l))
    }

    /// The table `a - b - c`, element by element (the three of the same shape).
    pub fn minus(a: &[Vec<i64>], b: &LeafTable, c: &LeafTable) -> LeafTable {
        let columns = b.columns;
        let mut values = Vec::with_capacity(b.values.len());
        for (leaf, row) in a.iter().enumerate() {
            let (used, other) = (b.row(leaf), c.row(leaf));
            values.extend((0..columns).map(|k| row[k] - used[k] - other[k]));
        }
        LeafTable { columns, values }
    }
}

impl From<&[Vec<i64>]> for LeafTable {
    /// A table from one row per leaf (all of the same length).
    fn from(rows: &[Vec<i64>]) -> LeafTable {
        LeafTable {
            columns: rows.first().map_or(0, Vec::len),
            values: rows.iter().flatten().copied().collect(),
        }
    }
}

impl From<Vec<Vec<i64>>> for LeafTable {
    fn from(rows: Vec<Vec<i64>>) -> LeafTable {
        LeafTable::from(rows.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_minus_subtracts_per_cell() {
        let cap = vec![vec![10, 20], vec![30, 40], vec![50, 60]];
        let t = LeafTable::from(cap.as_slice());
        assert_eq!(t.leaves(), 3);
        assert_eq!(t.rows().collect::<Vec<_>>(), [[10, 20], [30, 40], [50, 60]]);
        let mut used = LeafTable::zeroed(3, 2);
        used.row_mut(1)[0] = 5;
        let mut other = LeafTable::zeroed(3, 2);
        other.row_mut(2)[1] = 7;
        let free = LeafTable::minus(&cap, &used, &other);
        assert_eq!(free.row(0), [10, 20]);
        assert_eq!(free.row(1), [25, 40]);
        assert_eq!(free.row(2), [50, 53]);
        assert_eq!(LeafTable::zeroed(0, 3).leaves(), 0);
        assert_eq!(LeafTable::default().leaves(), 0);
    }
}
