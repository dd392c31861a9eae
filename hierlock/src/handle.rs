//! Locks that own their transaction: [`LockHandle`], the seed's `LockHandle`.

use sea_orm::{
    AccessMode, DatabaseConnection, DatabaseTransaction, DbBackend, IsolationLevel,
    TransactionTrait,
};

use crate::acquire::{Held, Locker};
use crate::config::Wait;
use crate::error::{Error, Result};
use crate::plan::LockPlan;
use crate::target::Request;

/// Locks held by a lock-only transaction of their own (READ COMMITTED),
/// released by [`LockHandle::release`] or when the handle is dropped.
///
/// Use this to serialise work that does not write through one SeaORM
/// transaction (calls to other services, files…). When the protected writes
/// are in the database, prefer [`Locker::acquire`] on their own transaction:
/// the locks then commit and roll back with the writes.
#[derive(Debug)]
pub struct LockHandle {
    txn: DatabaseTransaction,
    held: Held,
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
        let txn = db
            .begin_with_config(isolation, Some(AccessMode::ReadWrite))
            .await
            .map_err(|e| Error::database("opening a lock transaction", e))?;
        // On failure `txn` is dropped here, which rolls it back.
        let held = self
            .lock_on(&txn, requests.into_iter().map(Into::into).collect(), wait)
            .await?;
        Ok(LockHandle { txn, held })
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
    /// [`Error::Database`] if the rollback fails (the server then releases
    /// the locks when the connection closes).
    pub async fn release(self) -> Result<()> {
        self.txn
            .rollback()
            .await
            .map_err(|e| Error::database("releasing locks", e))
    }
}
