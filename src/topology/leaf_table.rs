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

    /// Appends a leaf's row (of `columns` values).
    pub fn push_row(&mut self, row: &[i64]) {
        debug_assert_eq!(row.len(), self.columns);
        self.values.extend_from_slice(row);
    }

    /// Every row, in leaf order.
    pub fn rows(&self) -> impl Iterator<Item = &[i64]> {
        (0..self.leaves()).map(|l| self.row(l))
    }

    /// The table `a - b - c`, element by element (the three of the same shape).
    pub fn minus(a: &LeafTable, b: &LeafTable, c: &LeafTable) -> LeafTable {
        LeafTable {
            columns: a.columns,
            values: a
                .values
                .iter()
                .zip(&b.values)
                .zip(&c.values)
                .map(|((x, y), z)| x - y - z)
                .collect(),
        }
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
        let free = LeafTable::minus(&t, &used, &other);
        assert_eq!(free.row(0), [10, 20]);
        assert_eq!(free.row(1), [25, 40]);
        assert_eq!(free.row(2), [50, 53]);
        assert_eq!(LeafTable::zeroed(0, 3).leaves(), 0);
        assert_eq!(LeafTable::default().leaves(), 0);
        let mut grown = LeafTable::zeroed(0, 2);
        grown.push_row(&[10, 20]);
        grown.push_row(&[30, 40]);
        assert_eq!(grown.rows().collect::<Vec<_>>(), [[10, 20], [30, 40]]);
    }
}
