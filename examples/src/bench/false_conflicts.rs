//! False conflicts: how often k concurrent transactions on distinct
//! resources share a bucket, measured by hashing random IDs with hierlock's
//! key scheme, against the birthday bound 1 − exp(−k(k−1)/2B).
//!
//! No server is needed: the bucket of an ID is a pure function.

use hierlock::{KeyScheme, Level};

use crate::bank::Rng;

/// How the k resource IDs of a trial are made.
#[derive(Clone, Copy, Debug)]
enum Ids {
    /// Random 64-bit user, account and resource IDs.
    Random,
    /// Resources 1..=k of one random account: sequential IDs, the common case.
    Sequential,
}

/// The birthday bound: the probability that k keys drawn uniformly from B
/// share at least one bucket.
pub fn birthday_bound(k: u64, buckets: u32) -> f64 {
    let k = k as f64;
    1.0 - (-k * (k - 1.0) / (2.0 * f64::from(buckets))).exp()
}

/// Measure and print the collision rate for several bucket spaces and k.
pub fn run(quick: bool) {
    let trials = if quick { 1_000 } else { 10_000 };
    println!(
        "\n## False conflicts: P(k distinct resources share a bucket), {trials} trials each, \
         seed FNV-1a key scheme"
    );
    println!(
        "  {:>10} {:>6} {:>12} {:>12} {:>14}",
        "buckets B", "k", "random IDs", "sequential", "birthday bound"
    );
    let mut rng = Rng::new(0x5EED);
    for buckets in [100_000u32, 1_000_000, 10_000_000] {
        // k for a bound of about 1 %, 9 %, 63 %, and the 32 workers of the
        // contended workload.
        let root = (2.0 * f64::from(buckets)).sqrt();
        let mut ks: Vec<u64> = [0.1, 0.3, 1.0].iter().map(|c| (c * root) as u64).collect();
        ks.push(32);
        ks.sort_unstable();
        for k in ks {
            let random = rate(&mut rng, Ids::Random, k, buckets, trials);
            let sequential = rate(&mut rng, Ids::Sequential, k, buckets, trials);
            println!(
                "  {buckets:>10} {k:>6} {random:>12.4} {sequential:>12.4} {:>14.4}",
                birthday_bound(k, buckets)
            );
        }
    }
    println!(
        "  (PostgreSQL advisory keys have 2^46 per level: the bound is below 10^-5 up to k = 26,000.)"
    );
}

/// The fraction of `trials` in which `k` resources share a bucket.
fn rate(rng: &mut Rng, ids: Ids, k: u64, buckets: u32, trials: u32) -> f64 {
    let mut collided = 0;
    let mut seen: Vec<u32> = Vec::with_capacity(k as usize);
    for _ in 0..trials {
        seen.clear();
        let (user, account) = (rng.next_u64().to_string(), rng.next_u64().to_string());
        for i in 0..k {
            let path = match ids {
                // Every resource under a user and an account of its own.
                Ids::Random => [(); 3].map(|()| rng.next_u64().to_string()),
                Ids::Sequential => [user.clone(), account.clone(), (i + 1).to_string()],
            };
            seen.push(KeyScheme::default().bucket_of(Level::Resource, &path, buckets));
        }
        seen.sort_unstable();
        if seen.windows(2).any(|pair| pair[0] == pair[1]) {
            collided += 1;
        }
    }
    f64::from(collided) / f64::from(trials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn birthday_bound_matches_known_values() {
        // 23 people, 365 days: about 50 % (the bound gives 0.500).
        assert!((birthday_bound(23, 365) - 0.500).abs() < 0.01);
        assert_eq!(birthday_bound(1, 10), 0.0);
    }

    #[test]
    fn random_ids_collide_about_as_the_bound_says() {
        let mut rng = Rng::new(1);
        let measured = rate(&mut rng, Ids::Random, 100, 10_000, 2_000);
        let bound = birthday_bound(100, 10_000); // 0.39
        assert!((measured - bound).abs() < 0.05, "{measured} vs {bound}");
    }
}
