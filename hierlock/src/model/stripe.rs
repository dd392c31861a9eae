//! Subtree reads: intention modes built from shared and exclusive locks.
//!
//! Multiple-granularity locking (Gray et al.) lets a reader lock a whole
//! subtree (S) while writers below it announce themselves on each ancestor
//! (IX): S conflicts with IX, IX is compatible with IX, S with S. Servers
//! offer only S and X, so each user and account gets `K` *stripe* keys
//! besides its own key:
//!
//! | MGL mode on node N   | locks taken                                     |
//! |----------------------|-------------------------------------------------|
//! | IS (a read below)    | S on N                                          |
//! | IX (a write below)   | S on N, X on one stripe of N (chosen by target) |
//! | S (a subtree read)   | S on N, S on every stripe of N                  |
//! | X (a write of N)     | X on N                                          |
//!
//! S–IX always meet on a stripe (S on all, X on one); IX–IX meet only when two
//! writers' targets pick the same stripe (probability 1/K); S–S and IS–anything
//! but X never conflict; X conflicts with all through N's own key.
//!
//! The stripe keys are a *second kind* of key, ordered right after their
//! level's node keys (see [`LockKey`](crate::LockKey)), so the global order,
//! and with it the freedom from deadlocks, holds across every mode; and a
//! transaction announces its writes below a node once (IX is held per
//! transaction: see [`LockPlan::within`](crate::LockPlan::within)), so a
//! resource locked within its account's write lock still comes after it.

use std::hash::Hasher;

use fnv::FnvHasher;

use crate::error::{Error, Result};
use crate::model::key::{ADVISORY_HASH_BITS, KeyScheme, fold_hash};
use crate::model::level::Level;

/// The most stripes per node: a subtree read of a user takes them all in one
/// call, and one call takes at most [`MAX_LOCKS_PER_CALL`](crate::MAX_LOCKS_PER_CALL) locks.
pub const MAX_STRIPES: u16 = 1024;

/// Whether the lock layout supports subtree reads, and with how many stripes.
///
/// Every service sharing a lock store must use the same value: the bucket
/// table records it when provisioned and [`Locker::connect`](crate::Locker::connect)
/// refuses a mismatch. With PostgreSQL's advisory keys there is no table to
/// record it in: configure it the same everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SubtreeReads {
    /// The seed's layout: shared ancestors, an exclusive target. A read of an
    /// account does not keep its resources from changing.
    #[default]
    Off,
    /// Users and accounts have `stripes` stripe keys each, and
    /// [`Target::read_subtree`](crate::Target::read_subtree) excludes every
    /// write below the node. A write takes one more lock per ancestor; two
    /// writes below one node falsely conflict with probability `1/stripes`.
    Striped {
        /// Stripe keys per user and per account, `1..=`[`MAX_STRIPES`].
        stripes: u16,
    },
}

impl SubtreeReads {
    /// `stripes` stripe keys per user and account.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] unless `stripes` is in `1..=`[`MAX_STRIPES`].
    pub fn striped(stripes: u16) -> Result<Self> {
        if stripes == 0 || stripes > MAX_STRIPES {
            return Err(Error::InvalidConfig(format!(
                "subtree reads need 1..={MAX_STRIPES} stripes per node, got {stripes}"
            )));
        }
        Ok(SubtreeReads::Striped { stripes })
    }

    /// Stripe keys per user and account (0 when off).
    pub const fn stripes(self) -> u16 {
        match self {
            SubtreeReads::Off => 0,
            SubtreeReads::Striped { stripes } => stripes,
        }
    }

    /// The name recorded in the bucket table's metadata after the key
    /// scheme's: nothing when off, so tables of the seed's layout keep theirs.
    pub(crate) fn layout_suffix(self) -> String {
        match self {
            SubtreeReads::Off => String::new(),
            SubtreeReads::Striped { stripes } => format!("+stripes-{stripes}"),
        }
    }

    /// Split a recorded layout name into the key scheme's name and this.
    pub(crate) fn parse_layout(name: &str) -> Option<(&str, SubtreeReads)> {
        match name.split_once("+stripes-") {
            None => Some((name, SubtreeReads::Off)),
            Some((scheme, stripes)) => {
                let stripes: u16 = stripes.parse().ok()?;
                Some((scheme, SubtreeReads::striped(stripes).ok()?))
            }
        }
    }
}

/// The stripe that a write of `target` (IDs root first) takes on each of its
/// ancestors: spread by the target, so that writes of different resources of
/// one account seldom meet.
pub(crate) fn stripe_of_target(target: &[String], stripes: u16) -> u16 {
    (mixed_hash(target, u64::MAX) % u64::from(stripes)) as u16
}

/// The bucket (in the stripe levels of the table) of stripe `stripe` of the
/// node `ids` at `level`.
pub(crate) fn stripe_bucket(
    scheme: KeyScheme,
    level: Level,
    ids: &[String],
    stripe: u16,
    space: u32,
) -> u32 {
    match scheme {
        // Independent of the node's own bucket, so that the stripes of nodes
        // that share a bucket do not all coincide.
        KeyScheme::SeedFnv1a32 => {
            (mixed_hash(ids, u64::from(stripe) ^ (u64::from(level.as_u8()) << 32))
                % u64::from(space)) as u32
        }
    }
}

/// The advisory key of stripe `stripe` of the node `ids` at `level`:
/// `namespace (16 bits) | 3 (2 bits) | level (1 bit: user 0, account 1) |
/// hash (45 bits)`. Node keys use 0–2 in the level bits, so stripe keys never
/// alias them.
pub(crate) fn advisory_stripe_key(namespace: u16, level: Level, ids: &[String], stripe: u16) -> i64 {
    const HASH_BITS: u32 = ADVISORY_HASH_BITS - 1;
    let hash = mixed_hash(ids, u64::from(stripe));
    let folded = fold_hash(hash, HASH_BITS);
    let level = u64::from(level.as_u8() & 1);
    ((u64::from(namespace) << 48) | (3 << ADVISORY_HASH_BITS) | (level << HASH_BITS) | folded)
        as i64
}

/// The level whose stripe the advisory key `key` is, if it is a stripe key.
pub(crate) fn advisory_stripe_level(key: i64) -> Option<Level> {
    let key = key as u64;
    if (key >> ADVISORY_HASH_BITS) & 0b11 != 3 {
        return None;
    }
    Some(if (key >> (ADVISORY_HASH_BITS - 1)) & 1 == 0 {
        Level::User
    } else {
        Level::Account
    })
}

/// FNV-1a 64 over the length-prefixed IDs and a salt (no two ID tuples
/// alias), then MurmurHash3's 64-bit finalizer: FNV-1a's low bits depend
/// only on the low bits of each byte (`"a"`, `"i"`, `"q"`, `"y"` agree in
/// their low three), and the hash is taken modulo K and the bucket space.
fn mixed_hash(ids: &[String], salt: u64) -> u64 {
    let mut hasher = FnvHasher::default();
    for id in ids {
        hasher.write(&(id.len() as u64).to_le_bytes());
        hasher.write(id.as_bytes());
    }
    hasher.write(&salt.to_le_bytes());
    let mut h = hasher.finish();
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn ids(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn stripe_counts_out_of_range_are_refused() {
        for bad in [0, MAX_STRIPES + 1] {
            let err = SubtreeReads::striped(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{bad}");
        }
        assert_eq!(SubtreeReads::striped(16).unwrap().stripes(), 16);
        assert_eq!(SubtreeReads::Off.stripes(), 0);
    }

    #[test]
    fn the_layout_name_round_trips_and_is_unchanged_when_off() {
        assert_eq!(SubtreeReads::Off.layout_suffix(), "");
        let on = SubtreeReads::striped(16).unwrap();
        let name = format!("seed-fnv1a32{}", on.layout_suffix());
        assert_eq!(name, "seed-fnv1a32+stripes-16");
        assert_eq!(
            SubtreeReads::parse_layout(&name),
            Some(("seed-fnv1a32", on))
        );
        assert_eq!(
            SubtreeReads::parse_layout("seed-fnv1a32"),
            Some(("seed-fnv1a32", SubtreeReads::Off))
        );
        assert_eq!(SubtreeReads::parse_layout("seed-fnv1a32+stripes-0"), None);
        assert_eq!(SubtreeReads::parse_layout("seed-fnv1a32+stripes-x"), None);
    }

    #[test]
    fn writes_spread_over_the_stripes() {
        let k = 16;
        let mut seen = [0u32; 16];
        for r in 0..1600 {
            let target = ids(&["u1", "a1", &r.to_string()]);
            seen[usize::from(stripe_of_target(&target, k))] += 1;
        }
        // Each stripe gets its share (100 expected) within a wide margin.
        assert!(seen.iter().all(|&n| (50..=150).contains(&n)), "{seen:?}");
    }

    /// Single-character IDs that differ only in their high bits (which
    /// FNV-1a alone leaves out of its low bits) spread over a power-of-two K.
    #[test]
    fn ids_differing_in_high_bits_spread_too() {
        let k = 8;
        let mut seen = [0u32; 8];
        for c in 'a'..='z' {
            let target = ids(&["u1", "a1", &c.to_string()]);
            seen[usize::from(stripe_of_target(&target, k))] += 1;
        }
        // 26 IDs over 8 stripes: 3.25 each on average.
        assert!(seen.iter().filter(|&&n| n > 0).count() >= 6, "{seen:?}");
        assert!(seen.iter().all(|&n| n <= 7), "{seen:?}");
        // FNV-1a alone puts these four (equal in their low three bits) on one
        // stripe whatever the other IDs: writers of them would always meet.
        let same_low_bits: std::collections::BTreeSet<u16> = ["a", "i", "q", "y"]
            .iter()
            .map(|r| stripe_of_target(&ids(&["u1", "a1", r]), k))
            .collect();
        assert!(same_low_bits.len() > 1, "{same_low_bits:?}");
        let space = 64;
        let buckets: std::collections::BTreeSet<u32> = (0..32)
            .map(|s| stripe_bucket(KeyScheme::SeedFnv1a32, Level::User, &ids(&["u1"]), s, space))
            .collect();
        // 32 stripes in 64 buckets: about 25 distinct by the birthday bound.
        assert!(buckets.len() >= 18, "{}", buckets.len());
    }

    #[test]
    fn stripes_of_one_node_are_distinct_keys() {
        let node = ids(&["u1", "a1"]);
        let keys: std::collections::BTreeSet<i64> = (0..64)
            .map(|s| advisory_stripe_key(7, Level::Account, &node, s))
            .collect();
        assert_eq!(keys.len(), 64);
        assert!(
            keys.iter()
                .all(|k| advisory_stripe_level(*k) == Some(Level::Account))
        );
        let user = advisory_stripe_key(7, Level::User, &ids(&["u1"]), 0);
        assert_eq!(advisory_stripe_level(user), Some(Level::User));
        let node_key = crate::model::key::advisory_key(7, Level::Account, &node);
        assert_eq!(advisory_stripe_level(node_key), None);
        let buckets: std::collections::BTreeSet<u32> = (0..64)
            .map(|s| stripe_bucket(KeyScheme::SeedFnv1a32, Level::Account, &node, s, 10_000_000))
            .collect();
        assert!(buckets.len() >= 63, "{}", buckets.len());
    }

    /// Golden values: stripe keys are part of the contract between services.
    #[test]
    fn stripe_keys_are_stable() {
        let node = ids(&["u1"]);
        assert_eq!(
            advisory_stripe_key(0x484C, Level::User, &node, 3),
            GOLDEN_ADVISORY
        );
        assert_eq!(stripe_of_target(&ids(&["u1", "a1", "r1"]), 16), GOLDEN_STRIPE);
        assert_eq!(
            stripe_bucket(KeyScheme::SeedFnv1a32, Level::User, &node, 3, 10_000_000),
            GOLDEN_BUCKET
        );
    }

    const GOLDEN_STRIPE: u16 = 5;
    const GOLDEN_BUCKET: u32 = 8_644_850;
    const GOLDEN_ADVISORY: i64 = 5_209_773_843_103_048_431;
}
