//! A Zipf sampler over the examples' seeded random source ([`Rng`], the
//! bank example's): reproducible workloads without a dependency.

use crate::bank::Rng;

/// Zipf's law over ranks `0..n`: rank k drawn with probability ∝ 1/(k+1)^s,
/// by inverse CDF (a binary search in the cumulative weights).
#[derive(Clone, Debug)]
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    /// The distribution over `n` ranks (`n` > 0) with exponent `s`.
    pub fn new(n: usize, s: f64) -> Self {
        let mut total = 0.0;
        let cumulative = (1..=n)
            .map(|k| {
                total += (k as f64).powf(-s);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    /// A rank, 0 the most frequent.
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let target = rng.next_f64() * total;
        self.cumulative
            .partition_point(|&c| c <= target)
            .min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_frequencies_follow_the_law() {
        let zipf = Zipf::new(1000, 1.1);
        let mut rng = Rng::new(7);
        let mut counts = [0u32; 3];
        for _ in 0..200_000 {
            if let Some(c) = counts.get_mut(zipf.sample(&mut rng)) {
                *c += 1;
            }
        }
        // Rank 0 against rank 1: 2^1.1 ≈ 2.14; rank 0 against 2: 3^1.1 ≈ 3.35.
        let r1 = f64::from(counts[0]) / f64::from(counts[1]);
        let r2 = f64::from(counts[0]) / f64::from(counts[2]);
        assert!((r1 - 2.14).abs() < 0.1, "{r1}");
        assert!((r2 - 3.35).abs() < 0.2, "{r2}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = Rng::new(1);
        assert!((0..10_000).all(|_| rng.below(3) < 3));
    }
}
