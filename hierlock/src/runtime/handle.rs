//! Locks that own their transaction: [`LockHandle`], the seed's `LockHandle`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend,
    IsolationLevel, Statement, TransactionTrait,
};

use crate::runtime::acquire::{Held, Leased, Locker};
use crate::config::Wait;
use crate::error::{Error, Result, TxnState};
use crate::model::plan::LockPlan;
use crate::model::target::Request;

/// Locks held by a lock-only transaction of their own (READ COMMITTED),
/// released by [`LockHandle::release`] or when the handle is dropped.
///
/// Use this to serialise work that does not write through one SeaORM
/// transaction (calls to other services, files…). When the protected writes
/// are in the database, prefer [`Locker::acquire`] on their own transaction:
/// the locks then commit and roll back with the writes.
///
/// Dropping a handle rolls its transaction back; with no async runtime left
/// (after the runtime shut down) the connection is closed instead, and the
/// server releases the locks when it sees the connection go. Dropping never
/// panics.
///
/// # The lease
///
/// A handle's transaction is idle by design while the work it protects
/// runs elsewhere. On PostgreSQL hierlock sets no lease for it. On MySQL and
/// MariaDB the lease is the pool's session setting
/// ([`lease::mysql_pool`](crate::lease::mysql_pool)): a handle on such a
/// pool that sends nothing for the lease is ended by the server, which
/// releases its locks while the work may still run. Poll it with
/// [`LockHandle::lost`] (or [`LockHandle::is_held`]) more often than the
/// lease: each check is a statement, which keeps the session alive, and a
/// lost handle is reported there. Or take handles from a pool without the
/// lease.
#[derive(Debug)]
#[must_use = "the locks are released as soon as the handle is dropped"]
pub struct LockHandle {
    /// `None` only while being released or dropped.
    txn: Option<DatabaseTransaction>,
    held: Held,
    /// How long a lock check may go unanswered (the locker's
    /// [`Config::answer_timeout`](crate::Config::answer_timeout)).
    answer_timeout: Duration,
    /// A check went unanswered: the connection has a statement in flight
    /// that may never end, so it is not asked again.
    abandoned: AtomicBool,
}

impl Locker {
    /// Open a lock-only transaction on `db` and take `requests` on it.
    ///
    /// # Errors
    /// As [`Locker::acquire`]; on failure the transaction is rolled back, so
    /// nothing stays locked.
    pub async fn acquire_handle<R: Into<Request>>(
        &self,
        db: &DatabaseConnection,
        requests: impl IntoIterator<Item = R>,
    ) -> Result<LockHandle> {
        self.acquire_handle_with(db, requests, self.config().wait())
            .await
    }

    /// [`Locker::acquire_handle`], waiting as `wait` says.
    ///
    /// # Errors
    /// As [`Locker::acquire_handle`].
    pub async fn acquire_handle_with<R: Into<Request>>(
        &self,
        db: &DatabaseConnection,
        requests: impl IntoIterator<Item = R>,
        wait: Wait,
    ) -> Result<LockHandle> {
        // SQLite has one isolation level and no SET TRANSACTION.
        let isolation = (db.get_database_backend() != DbBackend::Sqlite)
            .then_some(IsolationLevel::ReadCommitted);
        let doing = "opening a lock transaction";
        let answer_timeout = self.config().answer_timeout();
        let begin = db.begin_with_config(isolation, Some(AccessMode::ReadWrite));
        let txn = Error::answered_within(doing, answer_timeout, begin)
            .await?
            .map_err(|e| Error::database(doing, e))?;
        // On failure `txn` is dropped here, which rolls it back.
        let requests = requests.into_iter().map(Into::into).collect();
        let held = self.lock_on(&txn, requests, wait, Leased::No).await?;
        Ok(LockHandle {
            txn: Some(txn),
            held,
            answer_timeout: self.config().answer_timeout(),
            abandoned: AtomicBool::new(false),
        })
    }
}

impl LockHandle {
    /// What was asked for.
    pub fn requests(&self) -> &[Request] {
        &self.held.requests
    }

    /// The locks taken, in the order they were taken.
    pub fn plan(&self) -> &LockPlan {
        &self.held.plan
    }

    /// Release the locks now, by rolling the lock transaction back.
    ///
    /// # Errors
    /// [`Error::Database`] if the rollback fails, or
    /// [`Error::ConnectionLost`] if the server did not answer within the
    /// locker's [answer timeout](crate::Config::with_answer_timeout): the
    /// server then releases the locks when it sees the connection go.
    pub async fn release(mut self) -> Result<()> {
        let Some(txn) = self.txn.take() else {
            return Ok(());
        };
        let doing = "releasing locks";
        if self.abandoned.load(Ordering::Relaxed) {
            // Its last check is still unanswered: a rollback would wait behind it.
            return Err(Error::no_answer(doing, self.answer_timeout, TxnState::Lost));
        }
        Error::answered_within(doing, self.answer_timeout, txn.rollback())
            .await?
            .map_err(|e| Error::database(doing, e))
    }

    /// Whether the locks are still held: asks the server, on the handle's
    /// own connection. `false` once the connection is gone (the server
    /// restarted, the connection was killed): the server released the locks
    /// with it, and whatever they protected may have changed. Also `false`
    /// when the server does not answer within the locker's
    /// [answer timeout](crate::Config::with_answer_timeout) (a dead network
    /// never answers): the locks can then no longer be relied on, and the
    /// handle's connection is abandoned (every later check is `false` too).
    pub async fn is_held(&self) -> bool {
        let Some(txn) = &self.txn else {
            return false;
        };
        if self.abandoned.load(Ordering::Relaxed) {
            return false;
        }
        let ping = Statement::from_string(txn.get_database_backend(), "SELECT 1");
        match tokio::time::timeout(self.answer_timeout, txn.query_one_raw(ping)).await {
            Ok(answer) => answer.is_ok(),
            Err(_elapsed) => {
                self.abandoned.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Resolves when the locks are lost: checks [`LockHandle::is_held`]
    /// every `every`, and returns once it is `false` (DistributedLock's
    /// `HandleLostToken`). Race it with the work the locks protect:
    ///
    /// ```no_run
    /// # async fn demo(handle: hierlock::LockHandle) {
    /// # async fn long_job() {}
    /// use std::time::Duration;
    /// tokio::select! {
    ///     () = long_job() => {}
    ///     () = handle.lost(Duration::from_secs(1)) => eprintln!("lock lost: stop"),
    /// }
    /// # }
    /// ```
    pub async fn lost(&self, every: Duration) {
        while self.is_held().await {
            tokio::time::sleep(every).await;
        }
    }
}

impl Drop for LockHandle {
    fn drop(&mut self) {
        let Some(txn) = self.txn.take() else { return };
        if tokio::runtime::Handle::try_current().is_ok() {
            // SeaORM queues the rollback; sqlx runs it as the connection goes
            // back to its pool.
            drop(txn);
            return;
        }
        // No runtime: sqlx would panic spawning the connection's return to
        // the pool. Give it a runtime to spawn into, and drop that runtime,
        // which closes the connection: the server then releases the locks.
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(runtime) => {
                let _entered = runtime.enter();
                drop(txn);
            }
            // Not even a runtime can be built: leak the connection rather
            // than panic in a destructor (the process is shutting down).
            Err(_) => std::mem::forget(txn),
        }
    }
}
