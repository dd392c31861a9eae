//! Protected deletes of one row, by primary key.

use std::marker::PhantomData;

use sea_orm::sea_query::IntoValueTuple;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, EntityTrait,
    Iterable, PrimaryKeyToColumn, PrimaryKeyTrait, QueryFilter, QueryTrait,
};

use super::version::{Versioned, check_version, version_column, why_unwritten};
use super::{
    Proof, Protect, WriteFuture, WriteProof, check_stored, coverage, failed, load_for_write,
    primary_key_condition, returned_row, returning, table,
};
use crate::error::{Error, Result};

/// A delete of a protected entity, waiting for its proof:
/// `account::Entity::delete(am).exec(&lock)` or
/// `account::Entity::delete_by_id(7).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedDelete<E: EntityTrait> {
    /// `<pk> = ..`, or why there is none.
    key: Result<Condition>,
    /// The version the delete is based on (from `delete(model)` of a
    /// versioned entity).
    expected: Option<i64>,
    /// The model given to `delete(model)`, whose unchanged ID fields the
    /// statement pins; nothing set for `delete_by_id`.
    model: E::ActiveModel,
    entity: PhantomData<E>,
}

impl<E: Protect> ProtectedDelete<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Delete the row with the primary key of `model` once a proof is given;
    /// on a versioned entity, only if it is at the version of `model`.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedDelete {
            key: primary_key_condition::<E>(&model, "delete"),
            expected: E::active_version(&model),
            model,
            entity: PhantomData,
        }
    }

    /// Delete the row with primary key `values` once a proof is given.
    pub fn by_id<T>(values: T) -> Self
    where
        T: Into<<E::PrimaryKey as PrimaryKeyTrait>::ValueType>,
    {
        let key = E::PrimaryKey::iter()
            .zip(values.into().into_value_tuple())
            .fold(Condition::all(), |all, (column, value)| {
                all.add(column.into_column().eq(value))
            });
        ProtectedDelete {
            key: Ok(key),
            expected: None,
            model: <E::ActiveModel as ActiveModelTrait>::default(),
            entity: PhantomData,
        }
    }

    /// Delete the row on the proof's transaction; returns the number of rows
    /// deleted: 1, or 0 when no row has this primary key (the same as
    /// [`ProtectedDelete::exec_without_returning`]).
    ///
    /// The proof must cover the stored row. The check is part of the
    /// `DELETE` itself (`.. WHERE <pk> AND <the row's IDs are the proof's>`),
    /// so the delete is one statement, as SeaORM's; one that deletes nothing
    /// reads the row to say why. On a versioned entity deleted with
    /// `delete(model)`, the statement runs only on the row at the version of
    /// `model` (`DELETE .. WHERE <pk> AND version = ?`).
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the stored row;
    ///   nothing was deleted.
    /// - [`Error::Conflict`]: the stored row is at another version than the
    ///   model's; nothing was deleted.
    /// - [`Error::Misuse`]: the primary key is not set.
    /// - [`Error::LockTimeout`], [`Error::WouldBlock`], [`Error::Deadlock`],
    ///   [`Error::ConnectionLost`]: the statement waited for the row too
    ///   long, or failed as a lock statement would; retryable.
    /// - [`Error::Database`]: the delete failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_without_returning(lock)
    }

    /// Delete the row on the proof's transaction; returns the number of rows
    /// deleted: 1, or 0 when no row has this primary key.
    ///
    /// # Errors
    /// As [`ProtectedDelete::exec`].
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(self.counted(lock))
    }

    /// The delete of [`ProtectedDelete::exec_without_returning`], with the
    /// proof's type checked (also a row of a nested save).
    pub(crate) async fn counted(self, lock: Proof<'_>) -> Result<u64> {
        if let Some(condition) = self.checked_in_statement(lock)? {
            let deleted = execute::<E>(condition, lock.txn()).await?;
            if deleted > 0 {
                return Ok(deleted);
            }
        }
        Ok(u64::from(self.read_first(lock).await?.is_some()))
    }

    /// Delete the row on the proof's transaction and return it as it was,
    /// or `None` when no row has this primary key: one `DELETE .. RETURNING`
    /// where the connection returns rows (PostgreSQL); elsewhere the row is
    /// read `FOR UPDATE` first (no other transaction can change it in
    /// between).
    ///
    /// # Errors
    /// As [`ProtectedDelete::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, Option<E::Model>>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            let txn = lock.txn();
            if txn.support_returning()
                && let Some(condition) = self.checked_in_statement(lock)?
            {
                let mut statement = E::delete_many().filter(condition).into_query();
                statement.returning(returning::<E>(txn.get_database_backend()));
                if let Some(row) = returned_row::<E>(&statement, txn, doing::<E>).await? {
                    return Ok(Some(row));
                }
            }
            self.read_first(lock).await
        })
    }

    /// Delete the row **without a lock proof**, on `txn`, if it is still at
    /// the version of the model given to `delete(model)`; returns the number
    /// of rows deleted: 1, or 0 when no row has this primary key. Only for
    /// entities declared with `#[protected(.., version = <field>)]`, as
    /// [`ProtectedUpdate::exec_versioned`](super::ProtectedUpdate::exec_versioned).
    ///
    /// # Errors
    /// - [`Error::Conflict`]: the stored row is at another version; nothing
    ///   was deleted.
    /// - [`Error::Misuse`]: the primary key or the version is not set
    ///   (`delete_by_id` has no version: use `delete(model)`); nothing was
    ///   sent to the server.
    /// - [`Error::Database`]: the delete failed.
    pub fn exec_versioned(self, txn: &DatabaseTransaction) -> WriteFuture<'_, u64>
    where
        E: Versioned,
    {
        Box::pin(async move {
            let key = self.key?;
            let Some(expected) = self.expected else {
                return Err(Error::Misuse(format!(
                    "delete of `{}` without a lock proof needs the version the delete is based on: \
                     use `delete(model)` with the model read from the database (not `delete_by_id`), \
                     or delete with `.exec(&lock)`",
                    table::<E>()
                )));
            };
            let deleted = statement::<E>(key.clone(), Some(expected), txn).await?;
            if deleted == 0 {
                why_unwritten::<E>(key, expected, txn, "delete").await?;
            }
            Ok(deleted)
        })
    }

    /// The delete's condition with the proof's check in it (`<pk> AND <the
    /// row's IDs are the proof's> [AND version = ?]`), or `None` where the
    /// check does not fit in a statement (or there is no key, which
    /// `read_first` reports): then the row is read first.
    fn checked_in_statement(&self, lock: Proof<'_>) -> Result<Option<Condition>> {
        let (Ok(key), Some(check)) = (&self.key, coverage::row::<E>(lock, &self.model)) else {
            return Ok(None);
        };
        with_version::<E>(key.clone().add(check), self.expected).map(Some)
    }

    /// Read the row (`FOR UPDATE`), check it, then delete it; the row
    /// deleted, if any.
    async fn read_first(self, lock: Proof<'_>) -> Result<Option<E::Model>> {
        let key = self.key?;
        let select = E::find().filter(key.clone());
        let Some(old) = load_for_write(select, lock.txn(), "delete").await? else {
            return Ok(None);
        };
        check_stored::<E>(&old, lock, "delete")?;
        check_version::<E>(&old, self.expected, "delete")?;
        let deleted = statement::<E>(key, self.expected, lock.txn()).await?;
        Ok((deleted > 0).then_some(old))
    }
}

fn doing<E: EntityTrait>() -> String {
    format!("deleting from `{}`", table::<E>())
}

/// `condition AND version = expected` on a versioned entity.
fn with_version<E: Protect>(condition: Condition, expected: Option<i64>) -> Result<Condition> {
    Ok(match (version_column::<E>()?, expected) {
        (Some(column), Some(expected)) => condition.add(column.eq(expected)),
        _ => condition,
    })
}

/// `DELETE .. WHERE condition`; how many rows it deleted.
async fn execute<E: Protect>(condition: Condition, txn: &DatabaseTransaction) -> Result<u64> {
    Ok(E::delete_many()
        .filter(condition)
        .exec(txn)
        .await
        .map_err(|e| failed(&doing::<E>(), e))?
        .rows_affected)
}

/// `DELETE .. WHERE <pk>`, and `AND version = expected` on a versioned
/// entity.
async fn statement<E: Protect>(
    key: Condition,
    expected: Option<i64>,
    txn: &DatabaseTransaction,
) -> Result<u64> {
    execute::<E>(with_version::<E>(key, expected)?, txn).await
}
