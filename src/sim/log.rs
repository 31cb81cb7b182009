//! An append-only list kept in fixed-size chunks, for what a run records as it goes (the
//! timeline's events, the usage changes). Growing never moves what is already there: a `Vec`
//! that doubles copies its whole contents each time, and at ten times Kueue's large-scale shape
//! the timeline alone was ≈ 100 MB (2.15 million records of 48 bytes then, 32 now), copied and briefly held twice
//! (glibc's `realloc` remapped large blocks instead; mimalloc, the binary's allocator, copies
//! them).

/// Entries per chunk (a power of two, so that the first chunk, growing as a `Vec` does, ends
/// exactly full).
const CHUNK: usize = 1 << 14;

/// An append-only list in chunks of [`CHUNK`] entries; every chunk but the last is full.
#[derive(Debug, Clone)]
pub(crate) struct ChunkedLog<T> {
    chunks: Vec<Vec<T>>,
}

impl<T> Default for ChunkedLog<T> {
    fn default() -> Self {
        ChunkedLog { chunks: Vec::new() }
    }
}

impl<T> ChunkedLog<T> {
    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(value),
            // The first chunk grows as a Vec (a short run keeps a short list); later ones are
            // allocated whole.
            None => self.chunks.push(vec![value]),
            Some(_) => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |last| (self.chunks.len() - 1) * CHUNK + last.len())
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }

    pub fn last_mut(&mut self) -> Option<&mut T> {
        self.chunks.last_mut()?.last_mut()
    }

    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            inner: self.chunks.iter().flatten(),
            left: self.len(),
        }
    }
}

impl<'a, T> IntoIterator for &'a ChunkedLog<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// The entries in order, knowing how many are left (a report sizes its lists by it).
#[derive(Debug, Clone)]
pub(crate) struct Iter<'a, T> {
    inner: std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>,
    left: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let next = self.inner.next()?;
        self.left -= 1;
        Some(next)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a, T> DoubleEndedIterator for Iter<'a, T> {
    fn next_back(&mut self) -> Option<&'a T> {
        let next = self.inner.next_back()?;
        self.left -= 1;
        Some(next)
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_in_order_across_chunks() {
        let mut log = ChunkedLog::default();
        assert!(log.is_empty() && log.get(0).is_none() && log.last_mut().is_none());
        assert_eq!((log.len(), log.iter().len()), (0, 0));
        let n = 2 * CHUNK + 5;
        for i in 0..n {
            log.push(i);
        }
        assert_eq!(log.len(), n);
        assert_eq!(log.chunks.len(), 3, "two full chunks and five entries");
        assert!(log.chunks.iter().all(|c| c.capacity() == CHUNK));
        assert!(log.iter().copied().eq(0..n));
        assert_eq!(log.iter().len(), n);
        let mut it = log.iter();
        it.next();
        it.next_back();
        assert_eq!(it.len(), n - 2);
        assert!((&log).into_iter().rev().copied().eq((0..n).rev()));
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK, n - 1] {
            assert_eq!(log.get(i), Some(&i));
        }
        assert_eq!(log.get(n), None);
        *log.last_mut().expect("not empty") = 7;
        assert_eq!(log.get(n - 1), Some(&7));
    }
}
