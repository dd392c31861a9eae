//! Lock proofs: values that show, in their type, which level is locked, and
//! at run time, which targets on which transaction.
//!
//! A [`Locked<'t, L, A>`](Locked) is what `#[hierlocked]` gives a method's
//! body. `L` is the level of the most specific target locked
//! ([`UserLevel`], [`AccountLevel`] or [`ResourceLevel`]) and `A` the access
//! ([`Write`], [`Read`] or [`ReadSubtree`]). Writes to
//! [protected entities](crate::Protect) take a proof and compile only when
//! `L` [`Covers`] the entity's level and `A` is [`Write`]; at run time they
//! also check that the row itself is covered.

use std::fmt;
use std::marker::PhantomData;

use sea_orm::{DatabaseTransaction, EntityTrait, Select};

use crate::runtime::acquire::{LockSet, Locker};
use crate::config::Wait;
use crate::error::{Error, Result};
use crate::model::level::Level;
use crate::model::plan::{KeyKind, Keyspace, LockKey, LockMode, LockPlan, PlannedLock};
use crate::model::target::{Access, Request, Target};

mod sealed {
    pub trait Sealed {}
}

/// A level as a type: [`UserLevel`], [`AccountLevel`], [`ResourceLevel`].
pub trait LevelMarker: sealed::Sealed + Send + Sync + 'static {
    /// The level this type stands for.
    const LEVEL: Level;
}

/// An access as a type: [`Write`], [`Read`] or [`ReadSubtree`].
pub trait AccessMarker: sealed::Sealed + Send + Sync + 'static {
    /// The access this type stands for.
    const ACCESS: Access;
}

/// The user level as a type: a proof whose most specific lock is a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserLevel {}
/// The account level as a type: a proof whose most specific lock is an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccountLevel {}
/// The resource level as a type: a proof whose most specific locks are resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceLevel {}

impl sealed::Sealed for UserLevel {}
impl sealed::Sealed for AccountLevel {}
impl sealed::Sealed for ResourceLevel {}

impl LevelMarker for UserLevel {
    const LEVEL: Level = Level::User;
}
impl LevelMarker for AccountLevel {
    const LEVEL: Level = Level::Account;
}
impl LevelMarker for ResourceLevel {
    const LEVEL: Level = Level::Resource;
}

/// Exclusive access as a type: the proof may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Write {}
/// Shared access as a type: the proof may only read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Read {}

/// A subtree read as a type: the proof may read the node and everything
/// below it, and no writer of that subtree runs meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadSubtree {}

impl sealed::Sealed for Write {}
impl sealed::Sealed for Read {}
impl sealed::Sealed for ReadSubtree {}

impl AccessMarker for Write {
    const ACCESS: Access = Access::Write;
}
impl AccessMarker for Read {
    const ACCESS: Access = Access::Read;
}
impl AccessMarker for ReadSubtree {
    const ACCESS: Access = Access::ReadSubtree;
}

/// `Self`, a proof's level, protects writes to entities at level `T`:
/// User covers Account covers Resource, and each level covers itself.
#[diagnostic::on_unimplemented(
    message = "a lock proof at `{Self}` does not cover writes to `{T}` entities",
    label = "this proof locks a level below the entity it writes",
    note = "User covers Account covers Resource: lock the entity's own level or one above it",
    note = "for an account-level entity give `#[hierlocked(user = .., account = ..)]` (without `resource`); for a user-level entity give only `user = ..`"
)]
pub trait Covers<T: LevelMarker>: LevelMarker {}

impl Covers<UserLevel> for UserLevel {}
impl Covers<AccountLevel> for UserLevel {}
impl Covers<ResourceLevel> for UserLevel {}
impl Covers<AccountLevel> for AccountLevel {}
impl Covers<ResourceLevel> for AccountLevel {}
impl Covers<ResourceLevel> for ResourceLevel {}

/// `Self`, a proof's access, allows writes: only [`Write`] does, since
/// [`Read`] and [`ReadSubtree`] hold shared locks.
#[diagnostic::on_unimplemented(
    message = "a read-lock proof (`read` or `read_subtree`) cannot write",
    label = "this proof holds shared (read) locks",
    note = "drop `read` or `read_subtree` from `#[hierlocked(..)]` to take write locks"
)]
pub trait CanWrite: AccessMarker {}

impl CanWrite for Write {}

/// Where `#[hierlocked]` finds the [`Locker`]: the method's `self` by
/// default, or the expression given with `locker = <expr>`.
///
/// Implement it for your repository:
///
/// ```
/// struct Repo {
///     locker: hierlock::Locker,
/// }
///
/// impl hierlock::HasLocker for Repo {
///     fn locker(&self) -> &hierlock::Locker {
///         &self.locker
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not provide a `hierlock::Locker`",
    label = "`#[hierlocked]` takes its locker from here",
    note = "implement `hierlock::HasLocker` for `{Self}` (`fn locker(&self) -> &hierlock::Locker`)",
    note = "or name a locker with `#[hierlocked(locker = <expr>, ..)]`"
)]
pub trait HasLocker {
    /// The locker to take locks with.
    fn locker(&self) -> &Locker;
}

impl HasLocker for Locker {
    fn locker(&self) -> &Locker {
        self
    }
}

impl<T: HasLocker + ?Sized> HasLocker for &T {
    fn locker(&self) -> &Locker {
        (**self).locker()
    }
}

impl<T: HasLocker + ?Sized> HasLocker for &mut T {
    fn locker(&self) -> &Locker {
        (**self).locker()
    }
}

impl<T: HasLocker + ?Sized> HasLocker for std::sync::Arc<T> {
    fn locker(&self) -> &Locker {
        (**self).locker()
    }
}

impl<T: HasLocker + ?Sized> HasLocker for std::rc::Rc<T> {
    fn locker(&self) -> &Locker {
        (**self).locker()
    }
}

impl<T: HasLocker + ?Sized> HasLocker for Box<T> {
    fn locker(&self) -> &Locker {
        (**self).locker()
    }
}

/// Proof that locks are held on transaction `'t`: `L` is the level of the
/// most specific target, `A` the access ([`Write`] by default).
///
/// `#[hierlocked]` makes one before the body runs and binds it to `lock`
/// (or the name given with `proof = <ident>`). Pass `&lock` to the writes of
/// [protected entities](crate::Protect); they run on [`Locked::txn`], so they
/// commit and roll back together with the locks.
///
/// Dropping a proof releases nothing: the locks belong to the transaction.
pub struct Locked<'t, L, A = Write> {
    set: LockSet<'t>,
    keyspace: Keyspace,
    /// Every lock the transaction holds through this proof and the proofs it
    /// was taken `within`, in key order.
    txn_locks: Vec<PlannedLock>,
    marker: PhantomData<fn() -> (L, A)>,
}

impl<'t, L: LevelMarker, A: AccessMarker> Locked<'t, L, A> {
    /// The transaction holding the locks.
    pub fn txn(&self) -> &'t DatabaseTransaction {
        self.set.txn()
    }

    /// The locks this proof's acquisition took.
    pub fn lock_set(&self) -> &LockSet<'t> {
        &self.set
    }

    /// What was asked for.
    pub fn requests(&self) -> &[Request] {
        self.set.requests()
    }

    /// Whether these locks protect `access` on `target` (see [`LockSet::covers`]).
    pub fn covers(&self, target: &Target, access: Access) -> bool {
        self.set.covers(target, access)
    }

    /// The level of the proof's most specific target.
    pub fn level(&self) -> Level {
        L::LEVEL
    }

    /// Read or write.
    pub fn access(&self) -> Access {
        A::ACCESS
    }

    /// Every lock the transaction holds through this proof, including those of
    /// the proofs it was taken `within`, in the global order.
    pub fn txn_locks(&self) -> &[PlannedLock] {
        &self.txn_locks
    }
}

impl<L: LevelMarker, A: AccessMarker> fmt::Debug for Locked<'_, L, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locked")
            .field("level", &L::LEVEL)
            .field("access", &A::ACCESS)
            .field("requests", &self.requests())
            .finish_non_exhaustive()
    }
}

/// What a proof taken earlier on the same transaction already holds: the
/// input of the ordering check of [`Locked::acquire`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prior<'p> {
    txn: &'p DatabaseTransaction,
    keyspace: Keyspace,
    locks: &'p [PlannedLock],
}

impl<L: LevelMarker, A: AccessMarker> Locked<'_, L, A> {
    pub(crate) fn prior(&self) -> Prior<'_> {
        Prior {
            txn: self.txn(),
            keyspace: self.keyspace,
            locks: &self.txn_locks,
        }
    }
}

impl<'t, L: LevelMarker, A: AccessMarker> Locked<'t, L, A> {
    /// Take `requests` on `txn` and prove it. With `within`, the transaction
    /// already holds that proof's locks: the new ones must come after them in
    /// the global order (or already be held in a sufficient mode).
    pub(crate) async fn acquire(
        locker: &Locker,
        txn: &'t DatabaseTransaction,
        requests: Vec<Request>,
        wait: Option<Wait>,
        within: Option<Prior<'_>>,
    ) -> Result<Self> {
        let (plan, txn_locks) = Self::planned(locker, txn, &requests, within)?;
        let wait = wait.unwrap_or_else(|| locker.config().wait());
        let set = locker.acquire_planned(txn, requests, plan, wait).await?;
        Ok(Self::proving(locker, set, txn_locks))
    }

    /// [`Locked::acquire`], then `rows` read once the locks are held (see
    /// [`Locker::acquire_reading`]).
    pub(crate) async fn acquire_reading<E: EntityTrait>(
        locker: &Locker,
        txn: &'t DatabaseTransaction,
        requests: Vec<Request>,
        wait: Option<Wait>,
        within: Option<Prior<'_>>,
        rows: Select<E>,
    ) -> Result<(Self, Vec<E::Model>)> {
        let (plan, txn_locks) = Self::planned(locker, txn, &requests, within)?;
        let wait = wait.unwrap_or_else(|| locker.config().wait());
        let (set, read) = locker
            .acquire_planned_reading(txn, requests, plan, wait, rows)
            .await?;
        Ok((Self::proving(locker, set, txn_locks), read))
    }

    /// The plan of `requests` and every lock the transaction holds once it
    /// is taken. With `within`, the transaction already holds that proof's
    /// locks: the new ones must come after them in the global order (or
    /// already be held in a sufficient mode).
    fn planned(
        locker: &Locker,
        txn: &DatabaseTransaction,
        requests: &[Request],
        within: Option<Prior<'_>>,
    ) -> Result<(LockPlan, Vec<PlannedLock>)> {
        debug_assert!(requests.iter().all(|r| r.access == A::ACCESS));
        match within {
            Some(prior) => {
                check_within(&prior, txn, locker.keyspace())?;
                // Planned against what the transaction holds: no stripe for
                // an ancestor whose writes it has announced already.
                let plan = locker.plan_within(requests, prior.locks)?;
                check_order(prior.locks, plan.locks(), requests)?;
                let txn_locks = merge(prior.locks, plan.locks());
                Ok((plan, txn_locks))
            }
            None => {
                let plan = locker.plan(requests)?;
                let txn_locks = plan.locks().to_vec();
                Ok((plan, txn_locks))
            }
        }
    }

    fn proving(locker: &Locker, set: LockSet<'t>, txn_locks: Vec<PlannedLock>) -> Self {
        Locked {
            set,
            keyspace: locker.keyspace(),
            txn_locks,
            marker: PhantomData,
        }
    }
}

fn check_within(prior: &Prior<'_>, txn: &DatabaseTransaction, keyspace: Keyspace) -> Result<()> {
    if !std::ptr::eq(prior.txn, txn) {
        return Err(Error::Misuse(
            "`within` names a lock proof of another transaction: a proof only vouches for \
             locks on its own transaction"
                .to_owned(),
        ));
    }
    if prior.keyspace != keyspace {
        return Err(Error::Misuse(format!(
            "`within` names a lock proof taken with another locker configuration \
             ({:?}, now {keyspace:?})",
            prior.keyspace
        )));
    }
    Ok(())
}

/// The ordering rule for a second acquisition on a transaction: every lock
/// not already held in a sufficient mode must come after every lock held, so
/// that the transaction's locks, over all its acquisitions, are still taken
/// in one increasing order (which is what rules out deadlocks).
fn check_order(held: &[PlannedLock], new: &[PlannedLock], requests: &[Request]) -> Result<()> {
    let Some(max) = held.iter().map(|l| l.key).max() else {
        return Ok(());
    };
    for lock in new {
        let already = held
            .iter()
            .any(|h| h.key == lock.key && h.mode >= lock.mode);
        if already || lock.key > max {
            continue;
        }
        let upgrade = held.iter().any(|h| h.key == lock.key);
        let why = if upgrade {
            format!(
                "it would upgrade the {} from shared to exclusive",
                describe_key(lock.key)
            )
        } else {
            format!(
                "it needs the {} {}, which comes before the {} already held",
                mode_name(lock.mode),
                describe_key(lock.key),
                describe_key(max)
            )
        };
        let asked: Vec<String> = requests.iter().map(ToString::to_string).collect();
        return Err(Error::Misuse(format!(
            "locking {} within an earlier proof is out of the global lock order ({why}); \
             take these locks in the enclosing #[hierlocked] call instead",
            asked.join(", ")
        )));
    }
    Ok(())
}

/// The union of two key-ordered lock lists, each key once in its strongest mode.
fn merge(a: &[PlannedLock], b: &[PlannedLock]) -> Vec<PlannedLock> {
    let mut all: Vec<PlannedLock> = a.iter().chain(b).copied().collect();
    all.sort_by(|x, y| x.key.cmp(&y.key).then(y.mode.cmp(&x.mode)));
    all.dedup_by_key(|l| l.key);
    all
}

fn describe_key(key: LockKey) -> String {
    let stripe = match key.kind {
        KeyKind::Node => "",
        KeyKind::Stripe => " stripe",
    };
    format!(
        "{}{stripe} lock (level {}, slot {})",
        key.level,
        key.table_level(),
        key.slot
    )
}

fn mode_name(mode: LockMode) -> &'static str {
    match mode {
        LockMode::Shared => "shared",
        LockMode::Exclusive => "exclusive",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn lock(level: Level, slot: i64, mode: LockMode) -> PlannedLock {
        PlannedLock {
            key: LockKey::node(level, slot),
            mode,
        }
    }

    #[test]
    fn later_keys_and_keys_already_held_are_in_order() {
        use LockMode::*;
        let held = [
            lock(Level::User, 5, Exclusive),
            lock(Level::Account, 3, Shared),
        ];
        let new = [
            lock(Level::User, 5, Shared),
            lock(Level::Account, 3, Shared),
            lock(Level::Account, 9, Exclusive),
            lock(Level::Resource, 1, Exclusive),
        ];
        assert!(check_order(&held, &new, &[]).is_ok());
        assert!(check_order(&[], &new, &[]).is_ok());
    }

    #[test]
    fn an_earlier_key_or_an_upgrade_is_refused() {
        use LockMode::*;
        let held = [lock(Level::Account, 7, Exclusive)];
        let earlier = [lock(Level::Account, 2, Exclusive)];
        let err = check_order(&held, &earlier, &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Misuse);
        assert!(
            err.to_string().contains(
                "out of the global lock order (it needs the exclusive account lock \
                 (level 1, slot 2), which comes before the account lock (level 1, slot 7) \
                 already held)"
            ),
            "{err}"
        );

        let held = [
            lock(Level::User, 1, Shared),
            lock(Level::Account, 7, Exclusive),
        ];
        let upgrade = [lock(Level::User, 1, Exclusive)];
        let err = check_order(&held, &upgrade, &[]).unwrap_err();
        assert!(err.to_string().contains("upgrade"), "{err}");
    }

    #[test]
    fn merging_keeps_each_key_once_in_its_strongest_mode() {
        use LockMode::*;
        let a = [
            lock(Level::User, 1, Shared),
            lock(Level::Account, 4, Exclusive),
        ];
        let b = [
            lock(Level::User, 1, Exclusive),
            lock(Level::Resource, 2, Exclusive),
        ];
        let merged = merge(&a, &b);
        assert_eq!(
            merged,
            vec![
                lock(Level::User, 1, Exclusive),
                lock(Level::Account, 4, Exclusive),
                lock(Level::Resource, 2, Exclusive),
            ]
        );
    }

    #[test]
    fn levels_cover_themselves_and_below() {
        fn covers<L: Covers<T>, T: LevelMarker>() {}
        covers::<UserLevel, ResourceLevel>();
        covers::<AccountLevel, AccountLevel>();
        covers::<ResourceLevel, ResourceLevel>();
    }
}
