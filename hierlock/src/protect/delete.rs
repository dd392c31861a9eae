//! Protected deletes of one row, by primary key.

use sea_orm::{EntityTrait, PrimaryKeyTrait, Select};

use super::{
    Proof, Protect, WriteFuture, WriteProof, by_primary_key, check_stored, load_for_write, table,
};
use crate::error::{Error, Result};

/// A delete of a protected entity, waiting for its proof:
/// `account::Entity::delete(am).exec(&lock)` or
/// `account::Entity::delete_by_id(7).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedDelete<E: EntityTrait> {
    row: Result<Select<E>>,
}

impl<E: Protect> ProtectedDelete<E>
where
    E::Model: Send,
    E::ActiveModel: From<E::Model> + Send,
{
    /// Delete the row with the primary key of `model` once a proof is given.
    pub fn new(model: E::ActiveModel) -> Self {
        ProtectedDelete {
            row: by_primary_key::<E>(&model, "delete"),
        }
    }

    /// Delete the row with primary key `values` once a proof is given.
    pub fn by_id<T>(values: T) -> Self
    where
        T: Into<<E::PrimaryKey as PrimaryKeyTrait>::ValueType>,
    {
        ProtectedDelete {
            row: Ok(E::find_by_id(values)),
        }
    }

    /// Delete the row on the proof's transaction; returns the number of rows
    /// deleted: 1, or 0 when no row has this primary key (the same as
    /// [`ProtectedDelete::exec_without_returning`]).
    ///
    /// The stored row is read first (`FOR UPDATE`): the proof must cover it.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the stored row;
    ///   nothing was deleted.
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

    /// Check, then delete; the row deleted, if any.
    async fn run(self, lock: Proof<'_>) -> Result<Option<E::Model>> {
        let Some(old) = load_for_write(self.row?, lock.txn(), "delete").await? else {
            return Ok(None);
        };
        check_stored::<E>(&old, lock, "delete")?;
        let deleted = E::delete(E::ActiveModel::from(old.clone()))
            .exec(lock.txn())
            .await
            .map_err(|e| Error::database(format!("deleting from `{}`", table::<E>()), e))?
            .rows_affected;
        Ok((deleted > 0).then_some(old))
    }
}
