//! Protected inserts: one row, several rows, and the way to an upsert.

use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QueryTrait};

use super::upsert::{Conflict, ProtectedUpsert};
use super::{
    Proof, Protect, WriteFuture, WriteProof, check_new, failed, read_back, returned_row,
    returned_rows, returning, table,
};
use crate::error::{Error, Result};

/// An insert of a protected entity, waiting for its proof:
/// `account::Entity::insert(am).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedInsert<E: EntityTrait> {
    model: E::ActiveModel,
}

impl<E: Protect> ProtectedInsert<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Insert `model` once a proof is given. On a versioned entity, a
    /// version field left unset is set to
    /// [`INITIAL_VERSION`](crate::INITIAL_VERSION).
    pub fn new(mut model: E::ActiveModel) -> Self {
        E::init_version(&mut model);
        ProtectedInsert { model }
    }

    /// Make this insert an upsert on the primary key: where a row with the
    /// new row's primary key exists, write `columns` of the new row over it.
    /// See [`ProtectedUpsert`] for what is checked.
    pub fn on_conflict_update<I>(self, columns: I) -> ProtectedUpsert<E>
    where
        I: IntoIterator<Item = E::Column>,
    {
        ProtectedUpsert::new(self.model, Conflict::Update(columns.into_iter().collect()))
    }

    /// Make this insert an upsert on the primary key that leaves an
    /// existing row as it is. See [`ProtectedUpsert`] for what is checked.
    pub fn on_conflict_do_nothing(self) -> ProtectedUpsert<E> {
        ProtectedUpsert::new(self.model, Conflict::DoNothing)
    }

    /// Insert the row on the proof's transaction and return it (the same
    /// as [`ProtectedInsert::exec_with_returning`]).
    ///
    /// The row's IDs come from the active model. If the row's own ID is not
    /// set (an auto-increment key), the proof must cover its parent: with a
    /// write lock on account `a1`, any new resource of `a1` may be inserted.
    ///
    /// # Errors
    /// - [`Error::NotCovered`]: the proof does not cover the new row; nothing
    ///   was written.
    /// - [`Error::Misuse`]: an ID field above the row's own is not set.
    /// - [`Error::Database`]: the insert failed.
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_with_returning(lock)
    }

    /// Insert the row on the proof's transaction and return it as stored:
    /// one `INSERT .. RETURNING` where the connection returns rows
    /// (PostgreSQL), else the `INSERT` and a read by the key it reports
    /// (MySQL, MariaDB), as SeaORM's own insert.
    ///
    /// # Errors
    /// As [`ProtectedInsert::exec`].
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, E::Model>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(self.run(lock))
    }

    /// The insert of [`ProtectedInsert::exec_with_returning`], with the
    /// proof's type checked (also a row of a nested save).
    pub(crate) async fn run(self, lock: Proof<'_>) -> Result<E::Model> {
        check_new::<E>(&self.model, lock, "insert")?;
        let doing = || format!("inserting into `{}`", table::<E>());
        let txn = lock.txn();
        // SeaORM's `exec_with_returning` needs `Model: IntoActiveModel`,
        // which a protected model does not have: the same statements,
        // built here.
        if txn.support_returning() {
            let mut statement = E::insert(self.model).into_query();
            statement.returning(returning::<E>(txn.get_database_backend()));
            return returned_row::<E>(&statement, txn, doing)
                .await?
                .ok_or_else(|| Error::database(doing(), DbErr::RecordNotInserted));
        }
        let key = E::insert(self.model)
            .exec(txn)
            .await
            .map_err(|e| failed(&doing(), e))?
            .last_insert_id;
        read_back(
            E::find_by_id(key),
            lock.txn(),
            doing,
            DbErr::RecordNotInserted,
        )
        .await
    }

    /// Insert the row on the proof's transaction; returns the number of rows
    /// inserted, as the server reports it (1).
    ///
    /// # Errors
    /// As [`ProtectedInsert::exec`].
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            check_new::<E>(&self.model, lock, "insert")?;
            E::insert(self.model)
                .exec_without_returning(lock.txn())
                .await
                .map_err(|e| failed(&format!("inserting into `{}`", table::<E>()), e))
        })
    }
}

/// An insert of several rows of a protected entity, waiting for its proof:
/// `resource::Entity::insert_many(rows).exec(&lock)`.
#[must_use = "a protected write does nothing until `.exec(&lock)`"]
pub struct ProtectedInsertMany<E: EntityTrait> {
    models: Vec<E::ActiveModel>,
}

impl<E: Protect> ProtectedInsertMany<E>
where
    E::Model: Send,
    E::ActiveModel: Send,
{
    /// Insert `models` once a proof is given (versions as for
    /// [`ProtectedInsert::new`]).
    pub fn new<I: IntoIterator<Item = E::ActiveModel>>(models: I) -> Self {
        let models = models
            .into_iter()
            .map(|mut model| {
                E::init_version(&mut model);
                model
            })
            .collect();
        ProtectedInsertMany { models }
    }

    /// Insert the rows on the proof's transaction, in one statement; returns
    /// how many were inserted (the same as
    /// [`ProtectedInsertMany::exec_without_returning`]).
    ///
    /// # Errors
    /// As [`ProtectedInsertMany::exec_without_returning`].
    pub fn exec<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        self.exec_without_returning(lock)
    }

    /// Insert the rows on the proof's transaction, in one statement; returns
    /// how many were inserted. Every row is checked as by
    /// [`ProtectedInsert::exec`] before anything is written.
    ///
    /// # Errors
    /// As [`ProtectedInsert::exec`], for the first row not covered.
    pub fn exec_without_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, u64>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            for model in &self.models {
                check_new::<E>(model, lock, "insert")?;
            }
            if self.models.is_empty() {
                return Ok(0);
            }
            E::insert_many(self.models)
                .exec_without_returning(lock.txn())
                .await
                .map_err(|e| failed(&format!("inserting into `{}`", table::<E>()), e))
        })
    }

    /// Insert the rows on the proof's transaction, in one statement, and
    /// return them as stored (`INSERT .. RETURNING *`). Every row is checked
    /// as by [`ProtectedInsert::exec`] before anything is written.
    ///
    /// # Errors
    /// - As [`ProtectedInsert::exec`], for the first row not covered.
    /// - [`Error::Misuse`]: the server has no `RETURNING` (MySQL; MariaDB
    ///   as SeaORM drives it), whose last insert ID names one row, not the
    ///   rows inserted: hierlock refuses rather than guesses. Nothing was
    ///   sent to the server.
    pub fn exec_with_returning<'p, P>(self, lock: &'p P) -> WriteFuture<'p, Vec<E::Model>>
    where
        P: WriteProof<E::Level> + ?Sized,
    {
        let lock = Proof::of(lock);
        Box::pin(async move {
            lock.require_returning::<E>("an insert of several rows returning them")?;
            for model in &self.models {
                check_new::<E>(model, lock, "insert")?;
            }
            if self.models.is_empty() {
                return Ok(Vec::new());
            }
            let txn = lock.txn();
            let mut statement = E::insert_many(self.models).into_query();
            statement.returning(returning::<E>(txn.get_database_backend()));
            let doing = || format!("inserting into `{}`", table::<E>());
            returned_rows::<E>(&statement, txn, doing).await
        })
    }
}
