//! From a node's IDs to the key that is locked: a bucket row or an advisory key.
//!
//! Two schemes live here, and both are part of the on-disk contract: changing
//! either output silently breaks exclusion between services that disagree, so
//! the unit tests pin golden values.

use std::hash::Hasher;

use fnv::FnvHasher;

use crate::model::level::Level;

/// The seed's bucket space: `hash mod 10,000,000`.
pub const SEED_BUCKET_SPACE: u32 = 10_000_000;

/// The default advisory-lock namespace (`0x484C`, "HL") on PostgreSQL.
pub const DEFAULT_ADVISORY_NAMESPACE: u16 = 0x484C;

/// How IDs become buckets in the bucket table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum KeyScheme {
    /// The seed's (Go package's) scheme: FNV-1a 32-bit over `"user:"+u`,
    /// `"account:"+u+":"+a` or `"resource:"+u+":"+a+":"+r`, modulo the bucket
    /// space. Bucket-for-bucket identical to the Go `hierlock`, so both can
    /// share one table.
    ///
    /// IDs are joined with `":"`, so `("a:b", "c")` and `("a", "b:c")` share a
    /// bucket. That adds false contention, never lost exclusion.
    #[default]
    SeedFnv1a32,
}

impl KeyScheme {
    /// The name recorded in the bucket table's metadata row.
    pub const fn name(self) -> &'static str {
        match self {
            KeyScheme::SeedFnv1a32 => "seed-fnv1a32",
        }
    }

    /// The scheme recorded under `name`, if this version knows it.
    pub fn from_name(name: &str) -> Option<KeyScheme> {
        (name == KeyScheme::SeedFnv1a32.name()).then_some(KeyScheme::SeedFnv1a32)
    }

    /// The bucket of the node `ids` (root first) at `level`, in `0..space`.
    ///
    /// `space` must be non-zero; [`Config`](crate::Config) guarantees it.
    pub fn bucket_of(self, level: Level, ids: &[impl AsRef<str>], space: u32) -> u32 {
        match self {
            KeyScheme::SeedFnv1a32 => fnv1a32(seed_key(level, ids).as_bytes()) % space,
        }
    }
}

/// The seed's key string: `user:u`, `account:u:a`, `resource:u:a:r`.
fn seed_key(level: Level, ids: &[impl AsRef<str>]) -> String {
    let mut key = String::from(level.name());
    for id in ids {
        key.push(':');
        key.push_str(id.as_ref());
    }
    key
}

/// FNV-1a, 32 bits (Go's `hash/fnv.New32a`). The `fnv` crate has only the
/// 64-bit variant, and the seed's buckets need this one.
fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// Bits of the advisory key left for the node's hash: bits 46–47 hold the
/// level (0–2), or 3 for a stripe key (see `model::stripe`).
pub(crate) const ADVISORY_HASH_BITS: u32 = 46;

/// `hash` folded into its low `bits` bits (the high bits XORed in).
pub(crate) fn fold_hash(hash: u64, bits: u32) -> u64 {
    (hash ^ (hash >> bits)) & ((1 << bits) - 1)
}

/// The PostgreSQL advisory-lock key of a node: a 64-bit key laid out as
/// `namespace (16 bits) | level (2 bits) | hash (46 bits)`.
///
/// The hash is FNV-1a 64 over the length-prefixed IDs, so no two ID tuples
/// alias (unlike the seed's `":"`-joined strings), and 2^46 keys per level
/// make a false conflict about seven million times rarer than with 10^7
/// buckets. The namespace keeps these keys apart from the application's own
/// advisory locks: pick one that your application does not use.
pub fn advisory_key(namespace: u16, level: Level, ids: &[impl AsRef<str>]) -> i64 {
    let mut hasher = FnvHasher::default();
    for id in ids {
        let id = id.as_ref().as_bytes();
        hasher.write(&(id.len() as u64).to_le_bytes());
        hasher.write(id);
    }
    let hash = hasher.finish();
    let folded = fold_hash(hash, ADVISORY_HASH_BITS);
    let key =
        (u64::from(namespace) << 48) | (u64::from(level.as_u8()) << ADVISORY_HASH_BITS) | folded;
    key as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: KeyScheme = KeyScheme::SeedFnv1a32;

    #[test]
    fn fnv1a32_matches_the_published_test_vectors() {
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
    }

    /// Golden buckets, computed independently of this crate (the same FNV-1a
    /// over the same key strings as Go's `hash/fnv.New32a`). If one of these
    /// changes, Rust and Go services stop excluding each other.
    #[test]
    fn seed_buckets_are_bucket_for_bucket_those_of_the_go_package() {
        let space = SEED_BUCKET_SPACE;
        assert_eq!(SEED.bucket_of(Level::User, &["u1"], space), 3_142_546);
        assert_eq!(
            SEED.bucket_of(Level::Account, &["u1", "a1"], space),
            5_156_936
        );
        assert_eq!(
            SEED.bucket_of(Level::Resource, &["u1", "a1", "r1"], space),
            185_732
        );
        assert_eq!(
            SEED.bucket_of(Level::Resource, &["a", "b", "c"], space),
            1_967_455
        );
        assert_eq!(SEED.bucket_of(Level::User, &["ユーザー"], space), 1_932_815);
        assert_eq!(SEED.bucket_of(Level::User, &[""], space), 6_446_168);
    }

    #[test]
    fn seed_keys_alias_when_ids_contain_the_separator() {
        let space = SEED_BUCKET_SPACE;
        assert_eq!(
            SEED.bucket_of(Level::Account, &["a:b", "c"], space),
            SEED.bucket_of(Level::Account, &["a", "b:c"], space),
        );
    }

    #[test]
    fn buckets_stay_inside_the_space() {
        for space in [1, 2, 7, 1000] {
            for i in 0..200 {
                assert!(SEED.bucket_of(Level::User, &[i.to_string()], space) < space);
            }
        }
    }

    #[test]
    fn advisory_keys_are_namespaced_levelled_and_do_not_alias() {
        let key = advisory_key(DEFAULT_ADVISORY_NAMESPACE, Level::Account, &["u1", "a1"]);
        assert_eq!((key as u64) >> 48, 0x484C);
        assert_eq!(((key as u64) >> 46) & 0b11, 1);
        assert_ne!(
            advisory_key(1, Level::Account, &["a:b", "c"]),
            advisory_key(1, Level::Account, &["a", "b:c"]),
        );
        assert_ne!(
            advisory_key(1, Level::User, &["u"]),
            advisory_key(2, Level::User, &["u"])
        );
        // Golden value: the key is part of the contract between services.
        assert_eq!(key, 0x484C_6740_696B_765B_u64 as i64);
    }
}
