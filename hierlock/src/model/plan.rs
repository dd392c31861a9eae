//! Any set of requests → one deduplicated, globally ordered list of row locks.
//!
//! This is what makes hierlock users deadlock-free: every transaction locks
//! the *keys it actually locks* (not the IDs they came from) in one global
//! order, each key once, in its strongest mode, so there is neither a cycle
//! between transactions nor a shared-to-exclusive upgrade within one.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::model::key::{KeyScheme, advisory_key};
use crate::model::level::Level;
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
/// advisory key. Ordered by level, then slot: the global lock order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockKey {
    /// The level of the node(s) hashed here.
    pub level: Level,
    /// The bucket number, or the 64-bit advisory key.
    pub slot: i64,
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
        LockKey { level, slot }
    }
}

/// The locks for a set of requests, deduplicated and in global order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LockPlan {
    locks: Vec<PlannedLock>,
}

impl LockPlan {
    /// Plan `requests`: expand each target to its ancestors (shared) and
    /// itself (exclusive for a write, shared for a read), keep the strongest
    /// mode per key, and sort by key.
    ///
    /// # Errors
    /// [`Error::EmptyId`] if any target has an empty ID; [`Error::Misuse`] if
    /// the plan needs more than [`MAX_LOCKS_PER_CALL`] locks.
    pub fn new<'r>(
        requests: impl IntoIterator<Item = &'r Request>,
        keyspace: Keyspace,
    ) -> Result<Self> {
        let mut modes = BTreeMap::<LockKey, LockMode>::new();
        for request in requests {
            let target = &request.target;
            if let Some(depth) = target.path().iter().position(String::is_empty) {
                return Err(Error::EmptyId {
                    level: Level::ALL[depth],
                    target: target.to_string(),
                });
            }
            for (level, ids) in target.lineage() {
                let mode = if level == target.level() && request.access == Access::Write {
                    LockMode::Exclusive
                } else {
                    LockMode::Shared
                };
                let slot = modes.entry(keyspace.key_of(level, ids)).or_insert(mode);
                *slot = (*slot).max(mode);
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
}
