//! A small deterministic generator for the tests' random cases (no dependency): SplitMix64.

pub struct Rng(pub u64);

impl Rng {
    /// The next value in `[0, n)`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
