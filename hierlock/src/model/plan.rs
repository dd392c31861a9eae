//! Any set of requests → one deduplicated, globally ordered list of row locks.
//!
//! This is what makes hierlock users deadlock-free: every transaction locks
//! the *keys it actually locks* (not the IDs they came from) in one global
//! order, each key once, in its strongest mode, so there is neither a cycle
//! between transactions nor a shared-to-exclusive upgrade within one.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::key::{ADVISORY_HASH_BITS, KeyScheme, advisory_key};
use crate::model::level::Level;
use crate::model::stripe::{
    SubtreeReads, advisory_stripe_key, advisory_stripe_level, stripe_bucket, stripe_of_target,
};
use crate::model::target::{Access, Request};

/// The most locks (distinct keys, ancestors included) one acquisition takes.
///
/// Bounded by the servers' 65,535 bind parameters per statement (two per row
/// on the bucket table); past a few thousand, locking a common ancestor is
/// cheaper anyway.
pub const MAX_LOCKS_PER_CALL: usize = 30_000;

/// A row (or advisory key) lock mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    /// `FOR SHARE` / `LOCK IN SHARE MODE` / `pg_advisory_xact_lock_shared`.
    Shared,
    /// `FOR UPDATE` / `pg_advisory_xact_lock`.
    Exclusive,
}

/// What one planned lock locks: a bucket row `(level, bucket)` or an
/// advisory key. Ordered by level, kind (a level's node keys before its
/// stripe keys), then slot: the global lock order. (So a resource's key
/// comes after its account's stripes: a lock taken within an account lock
/// comes after it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockKey {
    /// The level of the node(s) hashed here.
    pub level: Level,
    /// A node's own key, or one of its stripes (see [`SubtreeReads`]).
    pub kind: KeyKind,
    /// The bucket number, or the 64-bit advisory key.
    pub slot: i64,
}

impl LockKey {
    /// The key of a node (not a stripe).
    pub const fn node(level: Level, slot: i64) -> Self {
        LockKey {
            kind: KeyKind::Node,
            level,
            slot,
        }
    }

    /// The bucket table's `level` column for this key: the level (0–2) for
    /// node keys, 3 + the level for stripe keys (3: users', 4: accounts').
    pub const fn table_level(self) -> u8 {
        match self.kind {
            KeyKind::Node => self.level.as_u8(),
            KeyKind::Stripe => STRIPE_LEVEL_OFFSET + self.level.as_u8(),
        }
    }

    /// The key that the PostgreSQL advisory key `key` is: a node's, or with
    /// 3 in its level bits a stripe's (see [`advisory_key`]); `None` for a
    /// key of neither shape.
    pub fn of_advisory(key: i64) -> Option<Self> {
        if let Some(level) = advisory_stripe_level(key) {
            return Some(LockKey {
                level,
                kind: KeyKind::Stripe,
                slot: key,
            });
        }
        let level = ((key as u64) >> ADVISORY_HASH_BITS) & 0b11;
        let level = Level::from_depth(usize::try_from(level).ok()? + 1)?;
        Some(LockKey::node(level, key))
    }

    /// The key that the bucket table's row `(level, bucket)` is, if `level`
    /// is one of its levels (0–4).
    pub fn of_row(level: i64, bucket: i64) -> Option<Self> {
        let level = u8::try_from(level).ok()?;
        let (kind, level) = match level.checked_sub(STRIPE_LEVEL_OFFSET) {
            Some(stripe_of) => (KeyKind::Stripe, stripe_of),
            None => (KeyKind::Node, level),
        };
        let level = Level::from_depth(usize::from(level) + 1)?;
        if kind == KeyKind::Stripe && level == Level::Resource {
            return None;
        }
        Some(LockKey {
            kind,
            level,
            slot: bucket,
        })
    }
}

/// Where stripe rows start in the bucket table's `level` column.
pub const STRIPE_LEVEL_OFFSET: u8 = 3;

/// Which kind of key: a node's own, or one of its stripes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyKind {
    /// The node's own key.
    Node,
    /// One of a user's or account's stripe keys (only with [`SubtreeReads`]).
    Stripe,
}

/// One lock of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PlannedLock {
    /// What is locked.
    pub key: LockKey,
    /// How.
    pub mode: LockMode,
}

/// Where nodes are hashed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyspace {
    /// Rows of the bucket table.
    Buckets {
        /// ID → bucket mapping.
        scheme: KeyScheme,
        /// Buckets per level.
        space: u32,
    },
    /// PostgreSQL advisory keys under a namespace.
    Advisory {
        /// Top 16 bits of every key.
        namespace: u16,
    },
}

impl Keyspace {
    /// The key of the node `ids` at `level`.
    pub fn key_of(self, level: Level, ids: &[String]) -> LockKey {
        let slot = match self {
            Keyspace::Buckets { scheme, space } => i64::from(scheme.bucket_of(level, ids, space)),
            Keyspace::Advisory { namespace } => advisory_key(namespace, level, ids),
        };
        LockKey::node(level, slot)
    }

    /// The key of stripe `stripe` of the node `ids` at `level`.
    pub fn stripe_key_of(self, level: Level, ids: &[String], stripe: u16) -> LockKey {
        let slot = match self {
            Keyspace::Buckets { scheme, space } => {
                i64::from(stripe_bucket(scheme, level, ids, stripe, space))
            }
            Keyspace::Advisory { namespace } => {
                advisory_stripe_key(namespace, level, ids, stripe)
            }
        };
        LockKey {
            kind: KeyKind::Stripe,
            level,
            slot,
        }
    }
}

/// The locks for a set of requests, deduplicated and in global order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LockPlan {
    locks: Vec<PlannedLock>,
}

impl LockPlan {
    /// Plan `requests` in the seed's layout (no subtree reads): expand each
    /// target to its ancestors (shared) and itself (exclusive for a write,
    /// shared for a read), keep the strongest mode per key, and sort by key.
    ///
    /// # Errors
    /// [`Error::EmptyId`] if any target has an empty ID; [`Error::Misuse`] if
    /// the plan needs more than [`MAX_LOCKS_PER_CALL`] locks, or asks for a
    /// subtree read (which needs [`SubtreeReads::Striped`]).
    pub fn new<'r>(
        requests: impl IntoIterator<Item = &'r Request>,
        keyspace: Keyspace,
    ) -> Result<Self> {
        Self::with_subtree_reads(requests, keyspace, SubtreeReads::Off)
    }

    /// Plan `requests` in the layout `subtree_reads` (see [`SubtreeReads`]
    /// for the locks each mode takes).
    ///
    /// # Errors
    /// As [`LockPlan::new`]; a subtree read is refused only when
    /// `subtree_reads` is [`SubtreeReads::Off`].
    pub fn with_subtree_reads<'r>(
        requests: impl IntoIterator<Item = &'r Request>,
        keyspace: Keyspace,
        subtree_reads: SubtreeReads,
    ) -> Result<Self> {
        Self::build(requests, keyspace, subtree_reads, &[])
    }

    /// Plan `requests` for a transaction that already holds `held` (a
    /// nested acquisition, `within` an earlier proof): a write's stripe on an
    /// ancestor is left out where the transaction already announces its
    /// writes below that ancestor (MGL's IX, held once per transaction): it
    /// holds the ancestor's own key exclusively, or one of its stripes
    /// exclusively. So a resource written within its account's write lock
    /// needs no stripe the account lock did not take.
    ///
    /// # Errors
    /// As [`LockPlan::with_subtree_reads`].
    pub fn within<'r>(
        requests: impl IntoIterator<Item = &'r Request>,
        keyspace: Keyspace,
        subtree_reads: SubtreeReads,
        held: &[PlannedLock],
    ) -> Result<Self> {
        Self::build(requests, keyspace, subtree_reads, held)
    }

    fn build<'r>(
        requests: impl IntoIterator<Item = &'r Request>,
        keyspace: Keyspace,
        subtree_reads: SubtreeReads,
        held: &[PlannedLock],
    ) -> Result<Self> {
        let stripes = subtree_reads.stripes();
        let held_exclusive: std::collections::HashSet<LockKey> = held
            .iter()
            .filter(|l| l.mode == LockMode::Exclusive)
            .map(|l| l.key)
            .collect();
        // Whether the transaction already holds IX on the node `ids` at
        // `level` (once per node, by its IDs, not its key: two nodes may
        // share a key and not their stripes).
        let mut known = std::collections::HashMap::<(Level, Vec<String>), bool>::new();
        let mut announced = |level: Level, ids: &[String]| {
            if held_exclusive.is_empty() {
                return false;
            }
            *known.entry((level, ids.to_vec())).or_insert_with(|| {
                held_exclusive.contains(&keyspace.key_of(level, ids))
                    || (0..stripes)
                        .any(|s| held_exclusive.contains(&keyspace.stripe_key_of(level, ids, s)))
            })
        };
        let mut modes = BTreeMap::<LockKey, LockMode>::new();
        let mut lock = |key: LockKey, mode: LockMode| {
            let slot = modes.entry(key).or_insert(mode);
            *slot = (*slot).max(mode);
        };
        for request in requests {
            let target = &request.target;
            if let Some(depth) = target.path().iter().position(String::is_empty) {
                return Err(Error::EmptyId {
                    level: Level::ALL[depth],
                    target: target.to_string(),
                });
            }
            if request.access == Access::ReadSubtree && stripes == 0 {
                return Err(Error::Misuse(format!(
                    "{request} needs subtree reads: provision the lock table with stripes and \
                     configure them (`Config::with_subtree_reads`), or lock the node exclusively"
                )));
            }
            for (level, ids) in target.lineage() {
                let own = level == target.level();
                let mode = if own && request.access == Access::Write {
                    LockMode::Exclusive
                } else {
                    LockMode::Shared
                };
                lock(keyspace.key_of(level, ids), mode);
                if stripes == 0 || level == Level::Resource {
                    continue;
                }
                if !own && request.access == Access::Write && !announced(level, ids) {
                    // IX: one stripe, picked by the target being written.
                    let stripe = stripe_of_target(target.path(), stripes);
                    lock(
                        keyspace.stripe_key_of(level, ids, stripe),
                        LockMode::Exclusive,
                    );
                } else if own && request.access == Access::ReadSubtree {
                    // S on the subtree: every stripe, so that every IX meets it.
                    for stripe in 0..stripes {
                        lock(keyspace.stripe_key_of(level, ids, stripe), LockMode::Shared);
                    }
                }
            }
        }
        if modes.len() > MAX_LOCKS_PER_CALL {
            return Err(Error::Misuse(format!(
                "one acquisition can take at most {MAX_LOCKS_PER_CALL} locks, and this one needs {}: \
                 lock a common ancestor (the account or the user) instead",
                modes.len()
            )));
        }
        let locks = modes
            .into_iter()
            .map(|(key, mode)| PlannedLock { key, mode })
            .collect();
        Ok(LockPlan { locks })
    }

    /// The locks, in the order they are taken.
    pub fn locks(&self) -> &[PlannedLock] {
        &self.locks
    }

    /// Whether the plan locks nothing.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Maximal runs of consecutive locks with the same mode: each is taken by
    /// one statement on the bucket table (a Resource write lock: two runs).
    pub fn runs(&self) -> impl Iterator<Item = &[PlannedLock]> {
        self.locks.chunk_by(|a, b| a.mode == b.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::model::target::Target;

    const SEED: Keyspace = Keyspace::Buckets {
        scheme: KeyScheme::SeedFnv1a32,
        space: 10_000_000,
    };

    // Advisory keys: no bucket collisions among many IDs.
    const ADVISORY: Keyspace = Keyspace::Advisory { namespace: 1 };

    fn modes(plan: &LockPlan) -> Vec<(Level, LockMode)> {
        plan.locks().iter().map(|l| (l.key.level, l.mode)).collect()
    }

    #[test]
    fn a_resource_write_is_shared_above_and_exclusive_on_itself_in_two_runs() {
        let plan = LockPlan::new(&[Target::resource("u1", "a1", "r1").write()], SEED).unwrap();
        use LockMode::*;
        assert_eq!(
            modes(&plan),
            vec![
                (Level::User, Shared),
                (Level::Account, Shared),
                (Level::Resource, Exclusive)
            ]
        );
        assert_eq!(plan.runs().count(), 2);
    }

    #[test]
    fn a_read_is_shared_everywhere_in_one_run() {
        let plan = LockPlan::new(&[Target::resource("u1", "a1", "r1").read()], SEED).unwrap();
        assert!(plan.locks().iter().all(|l| l.mode == LockMode::Shared));
        assert_eq!(plan.runs().count(), 1);
    }

    #[test]
    fn shared_ancestors_are_upgraded_before_locking_never_after() {
        // A user write plus a resource under it: the user row is locked once, exclusively.
        let plan = LockPlan::new(
            &[
                Target::resource("u1", "a1", "r1").write(),
                Target::user("u1").write(),
            ],
            SEED,
        )
        .unwrap();
        assert_eq!(plan.locks().len(), 3);
        assert_eq!(plan.locks()[0].mode, LockMode::Exclusive);
    }

    #[test]
    fn the_order_is_by_key_whatever_the_input_order() {
        let requests: Vec<Request> = (0..20)
            .map(|i| Target::resource("u1", "a1", i).write())
            .collect();
        let forward = LockPlan::new(&requests, SEED).unwrap();
        let backward = LockPlan::new(requests.iter().rev(), SEED).unwrap();
        assert_eq!(forward, backward);
        assert!(forward.locks().windows(2).all(|w| w[0].key < w[1].key));
        assert_eq!(forward.locks().len(), 22);
    }

    #[test]
    fn colliding_ids_are_locked_once_in_bucket_order() {
        // With two buckets, many resources share a row: each row appears once.
        let tiny = Keyspace::Buckets {
            scheme: KeyScheme::SeedFnv1a32,
            space: 2,
        };
        let requests: Vec<Request> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|r| Target::resource("u", "acc", *r).write())
            .collect();
        let plan = LockPlan::new(&requests, tiny).unwrap();
        let resource_rows: Vec<i64> = plan
            .locks()
            .iter()
            .filter(|l| l.key.level == Level::Resource)
            .map(|l| l.key.slot)
            .collect();
        assert!(resource_rows.len() <= 2);
        assert!(resource_rows.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn empty_ids_are_refused_before_any_sql() {
        let err = LockPlan::new(&[Target::account("u1", "").write()], SEED).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::EmptyId);
        assert_eq!(err.to_string(), "empty account id in Account(u1/)");
    }

    #[test]
    fn one_acquisition_takes_at_most_max_locks_per_call() {
        // User and account, plus resources: exactly at the limit, then one over.
        let at_limit: Vec<Request> = (0..MAX_LOCKS_PER_CALL - 2)
            .map(|i| Target::resource("u", "a", i).write())
            .collect();
        let plan = LockPlan::new(&at_limit, ADVISORY).unwrap();
        assert_eq!(plan.locks().len(), MAX_LOCKS_PER_CALL);
        let over: Vec<Request> = (0..MAX_LOCKS_PER_CALL - 1)
            .map(|i| Target::resource("u", "a", i).write())
            .collect();
        let err = LockPlan::new(&over, ADVISORY).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Misuse);
        assert!(err.to_string().contains("30001"), "{err}");
    }

    #[test]
    fn nothing_requested_is_an_empty_plan() {
        assert!(LockPlan::new(&[], SEED).unwrap().is_empty());
    }

    const STRIPED: SubtreeReads = SubtreeReads::Striped { stripes: 16 };

    fn kinds(plan: &LockPlan) -> Vec<(KeyKind, Level, LockMode)> {
        plan.locks()
            .iter()
            .map(|l| (l.key.kind, l.key.level, l.mode))
            .collect()
    }

    #[test]
    fn with_stripes_a_write_takes_one_exclusive_stripe_per_ancestor_after_its_key() {
        use KeyKind::*;
        use LockMode::*;
        let requests = [Target::resource("u1", "a1", "r1").write()];
        for keyspace in [SEED, ADVISORY] {
            let plan = LockPlan::with_subtree_reads(&requests, keyspace, STRIPED).unwrap();
            assert_eq!(
                kinds(&plan),
                vec![
                    (Node, Level::User, Shared),
                    (Stripe, Level::User, Exclusive),
                    (Node, Level::Account, Shared),
                    (Stripe, Level::Account, Exclusive),
                    (Node, Level::Resource, Exclusive),
                ]
            );
            assert_eq!(plan.runs().count(), 4);
        }
        // Without stripes, the seed's plan is unchanged.
        let seed = LockPlan::with_subtree_reads(&requests, SEED, SubtreeReads::Off).unwrap();
        assert_eq!(seed, LockPlan::new(&requests, SEED).unwrap());
        assert_eq!(seed.locks().len(), 3);
    }

    #[test]
    fn a_subtree_read_is_shared_on_the_node_and_all_its_stripes() {
        let requests = [Target::account("u1", "a1").read_subtree()];
        let plan = LockPlan::with_subtree_reads(&requests, SEED, STRIPED).unwrap();
        assert!(plan.locks().iter().all(|l| l.mode == LockMode::Shared));
        let stripes: Vec<_> = plan
            .locks()
            .iter()
            .filter(|l| l.key.kind == KeyKind::Stripe)
            .collect();
        assert_eq!(stripes.len(), 16);
        assert!(stripes.iter().all(|l| l.key.level == Level::Account));
        assert_eq!(plan.locks().len(), 18);
        // A subtree read of a resource is a plain read.
        let leaf = [Target::resource("u1", "a1", "r1").read_subtree()];
        let plan = LockPlan::with_subtree_reads(&leaf, SEED, STRIPED).unwrap();
        let read = [Target::resource("u1", "a1", "r1").read()];
        assert_eq!(plan, LockPlan::with_subtree_reads(&read, SEED, STRIPED).unwrap());
    }

    #[test]
    fn a_subtree_read_without_stripes_is_refused() {
        let err =
            LockPlan::new(&[Target::account("u1", "a1").read_subtree()], SEED).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Misuse);
        assert!(err.to_string().contains("with_subtree_reads"), "{err}");
    }

    #[test]
    fn advisory_keys_say_which_key_they_are() {
        let ids: Vec<String> = vec!["u".into(), "a".into()];
        for level in [Level::User, Level::Account] {
            let ids = &ids[..level.depth()];
            let node = ADVISORY.key_of(level, ids);
            let stripe = ADVISORY.stripe_key_of(level, ids, 5);
            assert_eq!(LockKey::of_advisory(node.slot), Some(node));
            assert_eq!(LockKey::of_advisory(stripe.slot), Some(stripe));
        }
        let resource = ADVISORY.key_of(Level::Resource, &["u".into(), "a".into(), "r".into()]);
        assert_eq!(LockKey::of_advisory(resource.slot), Some(resource));
    }

    #[test]
    fn stripe_keys_sit_in_their_own_table_levels() {
        let key = SEED.stripe_key_of(Level::Account, &["u".into(), "a".into()], 3);
        assert_eq!(key.table_level(), 4);
        assert_eq!(LockKey::of_row(4, key.slot), Some(key));
        assert_eq!(LockKey::of_row(2, 9), Some(LockKey::node(Level::Resource, 9)));
        assert_eq!(LockKey::of_row(5, 9), None);
        assert_eq!(LockKey::of_row(-1, 9), None);
    }

    #[test]
    fn within_an_account_write_a_resource_write_needs_no_new_stripe() {
        let account = [Target::account("u1", "a1").write()];
        let held = LockPlan::with_subtree_reads(&account, SEED, STRIPED).unwrap();
        // The account write: its key X, and IX on the user (one stripe).
        assert_eq!(held.locks().len(), 3);
        let inner = [
            Target::resource("u1", "a1", "r1").write(),
            Target::resource("u1", "a1", "r2").write(),
        ];
        let plan = LockPlan::within(&inner, SEED, STRIPED, held.locks()).unwrap();
        // Nothing the account lock does not imply, and every new key after
        // every held one: the nested call keeps the global order.
        let new: Vec<_> = plan
            .locks()
            .iter()
            .filter(|l| !held.locks().iter().any(|h| h.key == l.key))
            .collect();
        assert_eq!(new.len(), 2, "{new:?}");
        assert!(new.iter().all(|l| l.key.kind == KeyKind::Node
            && l.key.level == Level::Resource
            && l.mode == LockMode::Exclusive));
        let max_held = held.locks().iter().map(|l| l.key).max().unwrap();
        assert!(new.iter().all(|l| l.key > max_held));
        // Outside any proof the same requests take their own stripes.
        let alone = LockPlan::with_subtree_reads(&inner, SEED, STRIPED).unwrap();
        assert!(alone.locks().iter().any(|l| l.key.kind == KeyKind::Stripe));
    }

    #[test]
    fn within_a_read_a_write_still_announces_itself() {
        // A plain read of the account holds no exclusive key: a write below
        // it must take its stripes (and, before the held account key, is
        // then out of order for a nested call: the caller's check refuses it).
        let held = LockPlan::with_subtree_reads(
            &[Target::account("u1", "a1").read()],
            SEED,
            STRIPED,
        )
        .unwrap();
        let inner = [Target::resource("u1", "a1", "r1").write()];
        let plan = LockPlan::within(&inner, SEED, STRIPED, held.locks()).unwrap();
        let stripes = plan
            .locks()
            .iter()
            .filter(|l| l.key.kind == KeyKind::Stripe)
            .count();
        assert_eq!(stripes, 2);
    }

    #[test]
    fn announcing_follows_nodes_not_buckets() {
        // Two accounts in one bucket (a space of 1): an exclusive lock of the
        // first announces the second (its bucket is held exclusively, and any
        // subtree reader of the second needs it), but a held stripe of one
        // node says nothing of another node's stripes.
        let tiny = Keyspace::Buckets {
            scheme: KeyScheme::SeedFnv1a32,
            space: 1,
        };
        let held = LockPlan::with_subtree_reads(
            &[Target::resource("u1", "a1", "r1").write()],
            ADVISORY,
            STRIPED,
        )
        .unwrap();
        let inner = [Target::resource("u1", "a2", "r1").write()];
        let plan = LockPlan::within(&inner, ADVISORY, STRIPED, held.locks()).unwrap();
        // u1 is announced (its stripe is held); a2 is not (only a1's stripe is).
        let new_stripes: Vec<_> = plan
            .locks()
            .iter()
            .filter(|l| l.key.kind == KeyKind::Stripe)
            .filter(|l| !held.locks().iter().any(|h| h.key == l.key))
            .map(|l| l.key.level)
            .collect();
        assert_eq!(new_stripes, [Level::Account]);
        let held_tiny = LockPlan::with_subtree_reads(
            &[Target::account("u1", "a1").write()],
            tiny,
            STRIPED,
        )
        .unwrap();
        let plan = LockPlan::within(&inner, tiny, STRIPED, held_tiny.locks()).unwrap();
        assert!(
            plan.locks()
                .iter()
                .all(|l| l.key.kind == KeyKind::Node || held_tiny.locks().iter().any(|h| h.key == l.key)),
            "{plan:?}"
        );
    }
}
