//! Protected updates of one row, by primary key.

use sea_orm::sea_query::UpdateStatement;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, Iterable, PrimaryKeyToColumn, QueryFilter, QueryTrait,
};

use super::version::{
    Versioned, check_version, increment, refuse_move, required_version, version_column,
    why_unwritten,
};
use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_moved, check_stored, coverage,
    failed, load_for_write, primary_key_condition, read_back, require_primary_key, returned_row,
    returning, table,
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
    /// The proof must cover both the node the row belongs to and, if the
    /// update sets ID fields, the node it will belong to. The check is part
    /// of the `UPDATE` itself (`.. WHERE <pk> AND <the row's IDs are the
    /// proof's>`), so the write sends the statements SeaORM's own update
    /// sends: `UPDATE .. RETURNING` where the connection returns rows
    /// (PostgreSQL), else the `UPDATE` and a read by primary key (MySQL,
    /// MariaDB). An update that touches no row reads it to say why. On an
    /// entity with a version field, the statement also sets `version =
    /// version + 1` and, if the active model carries a version (as a model
    /// read from the database does), runs only on the row at that version.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the row, before or
    ///   after; nothing was written.
    /// - [`Error::Conflict`]: the stored row is at another version than the
    ///   active model's; nothing was written.
    /// - [`Error::Misuse`]: the primary key is not set.
    /// - [`Error::LockTimeout`], [`Error::WouldBlock`], [`Error::Deadlock`],
    ///   [`Error::ConnectionLost`]: the statement waited for the row too
    ///   long, or failed as a lock statement would; retryable.
    /// - [`Error::Database`]: no row has this primary key
    ///   ([`DbErr::RecordNotUpdated`]), or the update failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_with_returning(lock)
    }

    /// Update the row on the proof's transaction and return it as stored
    /// afterwards.
    ///
    /// # Errors
    /// As [`ProtectedUpdate::exec`].
    pub fn exec_with_returning<'p, P>(mut self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move { self.returning(lock).await })
    }

    /// The update of [`ProtectedUpdate::exec_with_returning`], with the
    /// proof's type checked (also a row of a nested save).
    pub(crate) async fn returning(&mut self, lock: Proof<'_>) -> Result<E::Model> {
        require_primary_key::<E>(&self.model, "update")?;
        let returning = lock.txn().support_returning();
        match self.run(lock, returning).await? {
            Written::Row(row) => Ok(row),
            Written::Count(_) => {
                // The key is built only where the row is read back.
                let key = primary_key_condition::<E>(&self.model, "update")?;
                let reread = E::find().filter(key);
                read_back(reread, lock.txn(), doing::<E>, DbErr::RecordNotUpdated).await
            }
        }
    }

    /// Update the row on the proof's transaction, in one statement when the
    /// proof's check fits in it; returns the number of rows updated, as the
    /// server reports it.
    ///
    /// # Errors
    /// As [`ProtectedUpdate::exec`].
    pub fn exec_without_returning<'p, P>(mut self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            match self.run(lock, false).await? {
                Written::Count(updated) => Ok(updated),
                Written::Row(_) => Ok(1),
            }
        })
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
            let primary_key = primary_key_condition::<E>(&self.model, "update")?;
            let backend = txn.get_database_backend();
            let statement = statement::<E>(self.model, Some(expected), Condition::all(), backend)?;
            if txn.support_returning() {
                if let Some(row) = returning_one::<E>(statement, txn).await? {
                    return Ok(row);
                }
            } else if execute::<E>(&statement, txn).await? > 0 {
                let reread = E::find().filter(primary_key);
                return read_back(reread, txn, doing::<E>, DbErr::RecordNotUpdated).await;
            }
            why_unwritten::<E>(primary_key, expected, txn, "update").await?;
            Err(Error::database(doing::<E>(), DbErr::RecordNotUpdated))
        })
    }

    /// Write with the proof's check in the statement where it fits (one
    /// statement); else, or when that statement touched no row, read the
    /// row first to check it and say why. (`&mut self`: the write's future
    /// is then `Send` with a `Send` active model; `&self` would need `Sync`.)
    async fn run(&mut self, lock: Proof<'_>, returning: bool) -> Result<Written<E::Model>> {
        let expected = E::active_version(&self.model);
        if writes_a_column::<E>(&self.model)?
            && let Some(check) = coverage::row::<E>(lock, &self.model)
        {
            let backend = lock.txn().get_database_backend();
            let statement = statement::<E>(self.model.clone(), expected, check, backend)?;
            if returning {
                if let Some(row) = returning_one::<E>(statement, lock.txn()).await? {
                    return Ok(Written::Row(row));
                }
            } else {
                let updated = execute::<E>(&statement, lock.txn()).await?;
                if updated > 0 {
                    return Ok(Written::Count(updated));
                }
            }
        }
        self.read_first(lock, expected).await.map(Written::Count)
    }

    /// Read the row (`FOR UPDATE`, so its IDs are current), check it, then
    /// update it.
    async fn read_first(&mut self, lock: Proof<'_>, expected: Option<i64>) -> Result<u64> {
        let select = by_primary_key::<E>(&self.model, "update")?;
        let Some(old) = load_for_write(select, lock.txn(), "update").await? else {
            return Err(Error::database(doing::<E>(), DbErr::RecordNotUpdated));
        };
        let target = check_stored::<E>(&old, lock, "update")?;
        check_moved::<E>(&self.model, &target, lock, "update")?;
        check_version::<E>(&old, expected, "update")?;
        write::<E>(self.model.clone(), expected, lock.txn()).await
    }
}

/// What an update wrote: the row (from `RETURNING`), or how many rows.
enum Written<M> {
    Row(M),
    Count(u64),
}

fn doing<E: EntityTrait>() -> String {
    format!("updating `{}`", table::<E>())
}

/// Whether the update writes a column: a version, or a field set other
/// than the primary key (SeaORM's update of nothing reads the row instead).
fn writes_a_column<E: Protect>(model: &E::ActiveModel) -> Result<bool> {
    if version_column::<E>()?.is_some() {
        return Ok(true);
    }
    Ok(E::Column::iter()
        .filter(|column| E::PrimaryKey::from_column(*column).is_none())
        .any(|column| model.get(column).is_set()))
}

/// SeaORM's `UPDATE` of one row (its `SET` and `WHERE <pk>`), narrowed by
/// `check`; on a versioned entity also `SET version = version + 1` and,
/// when the write is based on a version, `AND version = expected`.
fn statement<E: Protect>(
    model: E::ActiveModel,
    expected: Option<i64>,
    check: Condition,
    backend: DbBackend,
) -> Result<UpdateStatement> {
    let version = version_column::<E>()?;
    let condition = match (version, expected) {
        (Some(column), Some(expected)) => check.add(column.eq(expected)),
        _ => check,
    };
    let mut changes = model;
    if let Some(column) = version {
        // The version in the model is the one the change is based on, not
        // a value to write.
        changes.not_set(column);
    }
    let mut statement = E::update(changes)
        .validate()
        .map_err(|e| Error::database(doing::<E>(), e))?
        .filter(condition)
        .into_query();
    if let Some(column) = version {
        statement.value(column, increment::<E>(column, backend)?);
    }
    Ok(statement)
}

/// Run an `UPDATE`; the rows it matched (the MySQL family's driver asks for
/// found rows, not changed ones).
async fn execute<E: Protect>(statement: &UpdateStatement, txn: &DatabaseTransaction) -> Result<u64> {
    txn.execute(statement)
        .await
        .map(|done| done.rows_affected())
        .map_err(|e| failed(&doing::<E>(), e))
}

/// Run an `UPDATE` of one row with `RETURNING`: the row, or `None` if it
/// touched none.
async fn returning_one<E: Protect>(
    mut statement: UpdateStatement,
    txn: &DatabaseTransaction,
) -> Result<Option<E::Model>> {
    statement.returning(returning::<E>(txn.get_database_backend()));
    returned_row::<E>(&statement, txn, doing::<E>).await
}

/// The `UPDATE` of one row after its check; on a versioned entity
/// `SET .., version = version + 1 WHERE <pk> [AND version = expected]`, and
/// a [`Conflict`](Error::Conflict) if the row is at another version.
async fn write<E: Protect>(
    model: E::ActiveModel,
    expected: Option<i64>,
    txn: &DatabaseTransaction,
) -> Result<u64> {
    if version_column::<E>()?.is_none() {
        return E::update(model)
            .exec_without_returning(txn)
            .await
            .map(|done| done.rows_affected)
            .map_err(|e| failed(&doing::<E>(), e));
    }
    let primary_key = primary_key_condition::<E>(&model, "update")?;
    let statement = statement::<E>(model, expected, Condition::all(), txn.get_database_backend())?;
    let updated = execute::<E>(&statement, txn).await?;
    if updated == 0 {
        if let Some(expected) = expected {
            why_unwritten::<E>(primary_key, expected, txn, "update").await?;
        }
        return Err(Error::database(doing::<E>(), DbErr::RecordNotUpdated));
    }
    Ok(updated)
}
