//! Protected updates of one row, by primary key.

use sea_orm::{ActiveModelTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter};

use super::version::{
    Versioned, check_version, increment, refuse_move, required_version, row_condition,
    version_column, why_unwritten,
};
use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_moved, check_stored,
    load_for_write, primary_key_condition, read_back, table,
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
    /// will belong to. On an entity with a version field, the statement
    /// also sets `version = version + 1` and, if the active model carries a
    /// version (as a model read from the database does), runs only on the
    /// row at that version.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the row, before or
    ///   after; nothing was written.
    /// - [`Error::Conflict`]: the stored row is at another version than the
    ///   active model's; nothing was written.
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

    /// Update the row **without a lock proof**, on `txn`, if it is still at
    /// the version the active model carries, and return it as stored
    /// afterwards (at the next version). Only for entities declared with
    /// `#[protected(.., version = <field>)]`: the check in the statement
    /// (`.. WHERE <pk> AND version = ?`) is what keeps this write from
    /// overwriting a change it has not seen, as for an edit that spans
    /// requests.
    ///
    /// It may not move the row (set an ID field): that needs the locks of
    /// the nodes involved.
    ///
    /// # Errors
    /// - [`Error::Conflict`]: the stored row is at another version; nothing
    ///   was written. Reload it and apply the change again.
    /// - [`Error::Misuse`]: the primary key or the version is not set, or an
    ///   ID field is set; nothing was sent to the server.
    /// - [`Error::Database`]: no row has this primary key
    ///   ([`DbErr::RecordNotUpdated`]), or the update failed.
    pub fn exec_versioned(self, txn: &DatabaseTransaction) -> WriteFuture<'_, E::Model>
    where
        E: Versioned,
    {
        Box::pin(async move {
            let expected = required_version::<E>(&self.model, "update")?;
            refuse_move::<E>(&self.model, "update")?;
            let reread = by_primary_key::<E>(&self.model, "update")?;
            write::<E>(self.model, Some(expected), txn).await?;
            read_back(reread, txn, &doing::<E>(), DbErr::RecordNotUpdated).await
        })
    }

    /// Check, then run the statement.
    async fn run(self, lock: Proof<'_>) -> Result<u64> {
        let select = by_primary_key::<E>(&self.model, "update")?;
        let Some(old) = load_for_write(select, lock.txn(), "update").await? else {
            return Err(Error::database(doing::<E>(), DbErr::RecordNotUpdated));
        };
        let expected = E::active_version(&self.model);
        let target = check_stored::<E>(&old, lock, "update")?;
        check_moved::<E>(&self.model, &target, lock, "update")?;
        check_version::<E>(&old, expected, "update")?;
        write::<E>(self.model, expected, lock.txn()).await
    }
}

fn doing<E: EntityTrait>() -> String {
    format!("updating `{}`", table::<E>())
}

/// The `UPDATE` of one row; on a versioned entity
/// `SET .., version = version + 1 WHERE <pk> [AND version = expected]`, and
/// a [`Conflict`](Error::Conflict) if the row is at another version.
async fn write<E: Protect>(
    model: E::ActiveModel,
    expected: Option<i64>,
    txn: &DatabaseTransaction,
) -> Result<u64> {
    let Some(column) = version_column::<E>()? else {
        return E::update(model)
            .exec_without_returning(txn)
            .await
            .map(|done| done.rows_affected)
            .map_err(|e| Error::database(doing::<E>(), e));
    };
    let primary_key = primary_key_condition::<E>(&model, "update")?;
    let condition = row_condition::<E>(&model, expected, "update")?;
    let mut changes = model;
    // The version in the model is the one the change is based on, not a
    // value to write.
    changes.not_set(column);
    let updated = E::update_many()
        .set(changes)
        .col_expr(column, increment::<E>(column))
        .filter(condition)
        .exec(txn)
        .await
        .map_err(|e| Error::database(doing::<E>(), e))?
        .rows_affected;
    if updated == 0 {
        if let Some(expected) = expected {
            why_unwritten::<E>(primary_key, expected, txn, "update").await?;
        }
        return Err(Error::database(doing::<E>(), DbErr::RecordNotUpdated));
    }
    Ok(updated)
}
