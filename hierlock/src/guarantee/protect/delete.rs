//! Protected deletes of one row, by primary key.

use std::marker::PhantomData;

use sea_orm::sea_query::IntoValueTuple;
use sea_orm::{
    ColumnTrait, Condition, DatabaseTransaction, EntityTrait, Iterable, PrimaryKeyToColumn,
    PrimaryKeyTrait, QueryFilter,
};

use super::version::{Versioned, check_version, version_column, why_unwritten};
use super::{
    Proof, Protect, WriteFuture, WriteProof, check_stored, load_for_write, primary_key_condition,
    table,
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
    entity: PhantomData<E>,
}

impl<E: Protect> ProtectedDelete<E>
where
    E::Model: Send,
{
    /// Delete the row with the primary key of `model` once a proof is given;
    /// on a versioned entity, only if it is at the version of `model`.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedDelete {
            key: primary_key_condition::<E>(&model, "delete"),
            expected: E::active_version(&model),
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
            entity: PhantomData,
        }
    }

    /// Delete the row on the proof's transaction; returns the number of rows
    /// deleted: 1, or 0 when no row has this primary key (the same as
    /// [`ProtectedDelete::exec_without_returning`]).
    ///
    /// The stored row is read first (`FOR UPDATE`): the proof must cover it.
    /// On a versioned entity deleted with `delete(model)`, the statement
    /// runs only on the row at the version of `model`
    /// (`DELETE .. WHERE <pk> AND version = ?`).
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the stored row;
    ///   nothing was deleted.
    /// - [`Error::Conflict`]: the stored row is at another version than the
    ///   model's; nothing was deleted.
    /// - [`Error::Misuse`]: the primary key is not set.
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
        Box::pin(async move {
            Ok(match self.run(lock).await? {
                Some(_) => 1,
                None => 0,
            })
        })
    }

    /// Delete the row on the proof's transaction and return it as it was
    /// (the row read `FOR UPDATE` before the delete, which no other
    /// transaction could change in between), or `None` when no row has this
    /// primary key.
    ///
    /// # Errors
    /// As [`ProtectedDelete::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, Option<E::Model>>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move { self.run(lock).await })
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

    /// Check, then delete; the row deleted, if any.
    async fn run(self, lock: Proof<'_>) -> Result<Option<E::Model>> {
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

/// `DELETE .. WHERE <pk>`, and `AND version = expected` on a versioned
/// entity.
async fn statement<E: Protect>(
    key: Condition,
    expected: Option<i64>,
    txn: &DatabaseTransaction,
) -> Result<u64> {
    let condition = match (version_column::<E>()?, expected) {
        (Some(column), Some(expected)) => key.add(column.eq(expected)),
        _ => key,
    };
    Ok(E::delete_many()
        .filter(condition)
        .exec(txn)
        .await
        .map_err(|e| Error::database(format!("deleting from `{}`", table::<E>()), e))?
        .rows_affected)
}
