//! Protected updates of one row, by primary key.

use sea_orm::{DbErr, EntityTrait};

use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_moved, check_stored,
    load_for_write, read_back, table,
};
use crate::error::{Error, Result};

/// An update of a protected entity, waiting for its proof:
/// `account::Entity::update(am).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedUpdate<E: EntityTrait> {
    model: E::ActiveModel,
}

impl<E: Protect> ProtectedUpdate<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Update the row with the primary key of `model` once a proof is given.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedUpdate { model }
    }

    /// Update the row on the proof's transaction and return it (the same as
    /// [`ProtectedUpdate::exec_with_returning`]).
    ///
    /// The stored row is read first (`FOR UPDATE`, so its IDs are current):
    /// the proof must cover both the node the row belongs to and the node it
    /// will belong to.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the row, before or
    ///   after; nothing was written.
    /// - [`Error::Misuse`]: the primary key is not set.
    /// - [`Error::Database`]: no row has this primary key
    ///   ([`DbErr::RecordNotUpdated`]), or the update failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_with_returning(lock)
    }

    /// Update the row on the proof's transaction and return it as stored
    /// afterwards (read back by its primary key).
    ///
    /// # Errors
    /// As [`ProtectedUpdate::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let doing = || format!("updating `{}`", table::<E>());
            let reread = by_primary_key::<E>(&self.model, "update")?;
            self.run(lock).await?;
            read_back(reread, lock.txn(), &doing(), DbErr::RecordNotUpdated).await
        })
    }

    /// Update the row on the proof's transaction; returns the number of rows
    /// updated, as the server reports it.
    ///
    /// # Errors
    /// As [`ProtectedUpdate::exec`].
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move { self.run(lock).await })
    }

    /// Check, then run the statement.
    async fn run(self, lock: Proof<'_>) -> Result<u64> {
        let doing = || format!("updating `{}`", table::<E>());
        let select = by_primary_key::<E>(&self.model, "update")?;
        let Some(old) = load_for_write(select, lock.txn(), "update").await? else {
            return Err(Error::database(doing(), DbErr::RecordNotUpdated));
        };
        let old = check_stored::<E>(&old, lock, "update")?;
        check_moved::<E>(&self.model, &old, lock, "update")?;
        E::update(self.model)
            .exec_without_returning(lock.txn())
            .await
            .map(|done| done.rows_affected)
            .map_err(|e| Error::database(doing(), e))
    }
}
