//! What a protected entity in SeaORM's dense format (`#[sea_orm::model]`)
//! resolves SeaORM's names to, in place of the write paths that format adds.
//!
//! The dense derives generate, in the entity's module, writes that run
//! without a lock: the nested `save` / `insert` / `update` / `delete` /
//! `action` of `ActiveModelEx`, `Model::cascade_delete`, `ModelEx::delete`
//! (all bounded by `C: sea_orm::TransactionTrait`) and
//! `Entity::delete_by_<unique key>` (built with `sea_orm::Delete` and
//! returning `sea_orm::ValidatedDeleteOne`). They name SeaORM through a
//! path relative to the module, so `#[protected]`'s module-local
//! `sea_orm` replaces those three names by the items here:
//!
//! - [`TransactionTrait`]: the bound of every nested write. A write proof
//!   ([`Locked`]`<'_, L, Write>`) begins a [`NestedTxn`], which carries its
//!   locks, and `am.save(&lock)` runs SeaORM's own nested save under them.
//!   A SeaORM transaction passes the bound too: a plain dense entity's
//!   nested save hands a protected related row the transaction it began
//!   (generic, so the bound must hold for any transaction), whether its own
//!   save was given a proof or not. A connection does not: a nested write
//!   with one is a compile error naming the proof. Its shape is SeaORM's,
//!   so the generated bodies type-check; their row writes and junction
//!   links go through inherent methods `#[protected]` adds to the sealed
//!   `ActiveModel` / `ActiveModelEx`, bounded by [`RawWrite`] and
//!   [`LinkWrite`], which refuse at run time, before the row's statement,
//!   any transaction that is not a [`NestedTxn`]: nothing of the save
//!   remains (the transaction SeaORM began for it rolls back).
//! - [`Delete`] and [`ValidatedDeleteOne`]: `delete_by_<key>` becomes a
//!   [`ProtectedDeleteMany`] on the key's filter, which runs with
//!   `.exec(&lock)` and checks every row it would delete.
//!
//! # A nested save under a proof
//!
//! Why a connection type rather than a check of the `ActiveModelEx` tree
//! before writing: most of what a nested save writes is known only while
//! it runs. A child's foreign key is filled by SeaORM after its parent's
//! `INSERT` (an auto-increment key), `Replace` and a `HasOne` replacement
//! find the rows they delete or unlink with a `SELECT` during the save,
//! and a re-parented row's old owner is in the database, not in the tree.
//! Every one of those rows reaches a row write of the sealed
//! `ActiveModel` (the inherent `insert` / `update` / `delete` the dense
//! code calls), with its IDs filled, on the [`NestedTxn`] of its level: it
//! is checked there, exactly as the flat write of that row
//! (`Entity::insert(am).exec(&lock)` etc.: the check in the statement
//! where it fits, the same statements SeaORM's own write sends), on the
//! savepoint SeaORM opens for the level. The top level's savepoint is
//! opened by the proof's [`TransactionTrait::begin`], so a refused row
//! rolls the whole save back: nothing of it remains.
//!
//! The junction rows of a `via` relation, which SeaORM links and unlinks
//! with its own bulk statements, go through the inherent
//! `establish_links*` / `delete_links*` instead: each is a checked row
//! write of the junction entity (see `links`).
//!
//! Refused at run time with [`Error::Misuse`] (nothing of the save
//! remains; the message names the flat write): a protected row reached
//! with no proof (see [`RawWrite`]), a row above the proof's
//! level (a `BelongsTo` parent saved through a child under the child's
//! proof), and a row whose ID fields above its own are not set (SeaORM
//! fills a child's foreign key to its parent, not its grandparent's ID).
//! A row outside the proof is [`Error::NotCovered`], naming the row.
//!
//! hierlock's errors travel through SeaORM's `DbErr` inside the save
//! (its signature is SeaORM's); `hierlock::Error::from(db_err)` (or `?` in
//! a function returning hierlock's `Result`) gives them back typed.
//!
//! [`Locked`]: crate::Locked
//! [`Error::Misuse`]: crate::Error::Misuse
//! [`Error::NotCovered`]: crate::Error::NotCovered

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sea_orm::{
    AccessMode, ActiveModelBehavior, ActiveModelTrait, ConnectionTrait, DatabaseTransaction,
    DbBackend, DbErr, DeleteResult, ExecResult, IsolationLevel, QueryResult,
    Related, RelatedSelfVia, Statement, TransactionError, TransactionOptions, TransactionSession,
};

use super::proof::{LevelMarker, Locked, Write};
use super::protect::{
    Proof, ProtectedDelete, ProtectedDeleteMany, ProtectedInsert, ProtectedUpdate, Protect,
};
use crate::error::Error;
use crate::model::level::Level;
use crate::model::target::Request;

mod identity;
mod junction;
mod links;

pub use junction::{
    Junction, PlainJunction, Probe, ProtectedJunction, Unlink,
};

/// Stands in for `sea_orm::TransactionTrait` in a protected dense entity's
/// module: the bound of `ActiveModelEx::{save, insert, update, delete,
/// action}`, `Model::cascade_delete` and `ModelEx::delete`. Implemented by
/// a write proof ([`Locked`]`<'_, L, Write>`), which runs them under its
/// locks (see the module docs), and by SeaORM transactions (the
/// [`NestedTxn`] a proof begins among them), on which the rows they write
/// are refused at run time unless the transaction is a proof's; with a
/// connection those nested writes do not compile.
#[diagnostic::on_unimplemented(
    message = "SeaORM's nested writes of a protected entity would run without a lock: `{Self}` cannot run them",
    label = "writes this row and its related rows with no lock proof",
    note = "a protected entity's nested writes (`save`, `insert`, `update`, `delete`, `action`, `ModelEx::delete`, `Model::cascade_delete`) run with a write proof, which checks every row they write: `NestedActiveModel::from(am).add_..(..).save(&lock)` in a `#[hierlocked]` method",
    note = "or write each row flat with the proof: `Entity::insert(am).exec(&lock)`, `Entity::update(am).exec(&lock)`, `Entity::delete(model).exec(&lock)` (a row's children: `Entity::delete_many().filter(..).exec(&lock)`)"
)]
pub trait TransactionTrait: Sync {
    /// The transaction the nested write runs in.
    type Transaction: ConnectionTrait
        + TransactionSession
        + TransactionTrait<Transaction = Self::Transaction>
        + sea_orm::TransactionTrait
        + RawWrite
        + LinkWrite
        + Send;

    /// Begin the nested write's transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Transaction, DbErr>> + Send;
}

/// The bound of the inherent `insert`, `update` and `delete` that
/// `#[protected]` gives a dense entity's raw SeaORM `ActiveModel` (what the
/// nested writes call): implemented by SeaORM transactions, of which only
/// the [`NestedTxn`] a proof begins writes; on another, the row is refused
/// at run time before its statement.
#[diagnostic::on_unimplemented(
    message = "the raw SeaORM active model of a protected entity cannot be written: `{Self}` is not a lock proof",
    label = "writes the row with no lock proof",
    note = "write it in a `#[hierlocked]` method with the proof: `Entity::insert(am).exec(&lock)`, `Entity::update(am).exec(&lock)` or `Entity::delete(am).exec(&lock)`, with `am` the protected module's `ActiveModel`"
)]
pub trait RawWrite {
    /// The nested save's connection, if this is one.
    #[doc(hidden)]
    fn nested(&self) -> Option<&NestedTxn>;
}

/// The bound of the inherent `establish_links*` / `delete_links*` that
/// `#[protected]` gives a dense entity's `ActiveModelEx` and raw
/// `ActiveModel` (what a nested save calls for its `via` relations): as
/// [`RawWrite`], only the [`NestedTxn`] a proof begins writes the
/// junction rows, each checked.
#[diagnostic::on_unimplemented(
    message = "SeaORM's junction links of a protected entity would be written without a lock: `{Self}` is not a lock proof",
    label = "writes junction rows with no lock proof",
    note = "write the junction rows in a `#[hierlocked]` method with the proof: `junction::Entity::insert(am).exec(&lock)` per link, `junction::Entity::delete_many().filter(..).exec(&lock)` to unlink"
)]
pub trait LinkWrite: RawWrite {}

/// The nested save's connection `db`, or the refusal of a row of `E` that
/// a nested write reached without a proof (`action`: what it would do).
fn proven<'a, E: sea_orm::EntityTrait, C: RawWrite + ?Sized>(
    db: &'a C,
    action: &str,
) -> Result<&'a NestedTxn, DbErr> {
    db.nested().ok_or_else(|| {
        carry(Error::Misuse(format!(
            "a nested write would {action} a row of the protected `{}` with no lock proof (its \
             transaction is not one a proof began): nothing of the save remains. Give the save \
             the proof, `.save(&lock)` (`.insert(&lock)`, ..) in a `#[hierlocked]` method whose \
             locks cover the row; a plain entity's nested save that carries protected rows \
             takes it too",
            sea_orm::EntityName::table_name(&E::default()),
        )))
    })
}

/// Stands in for `sea_orm::Delete` in a protected dense entity's module:
/// what its `delete_by_<unique key>` functions call.
#[derive(Debug)]
pub struct Delete;

impl Delete {
    /// A protected delete of the rows a filter will select (SeaORM's
    /// `Delete::_one_only_for_use_by_model_ex`, which deletes the whole
    /// table if no filter follows).
    #[doc(hidden)]
    pub fn _one_only_for_use_by_model_ex<E>(_: E) -> ProtectedDeleteMany<E>
    where
        E: Protect,
        E::Model: Send + Sync,
    {
        ProtectedDeleteMany::new()
    }
}

/// Stands in for `sea_orm::ValidatedDeleteOne` in a protected dense
/// entity's module: `delete_by_<unique key>` returns a protected delete,
/// run with `.exec(&lock)`.
pub type ValidatedDeleteOne<E> = ProtectedDeleteMany<E>;

/// The connection SeaORM's nested save of a protected dense entity runs on,
/// begun by the proof (`am.save(&lock)`): a savepoint of the proof's
/// transaction per level of the save, as SeaORM's own nested save on a
/// transaction, carrying the proof's locks. Each row the save writes is
/// checked against them (see the module docs). Only a proof makes one.
pub struct NestedTxn {
    txn: DatabaseTransaction,
    requests: Arc<[Request]>,
    level: Level,
}

impl std::fmt::Debug for NestedTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedTxn")
            .field("requests", &self.requests)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl NestedTxn {
    async fn below(&self) -> Result<NestedTxn, DbErr> {
        Ok(NestedTxn {
            txn: sea_orm::TransactionTrait::begin(&self.txn).await?,
            requests: Arc::clone(&self.requests),
            level: self.level,
        })
    }

    fn proof(&self) -> Proof<'_> {
        Proof::nested(&self.requests, &self.txn)
    }

    /// [`Error::Misuse`] for a row of `E` above the proof's level.
    fn level_check<E: Protect>(&self, action: &str) -> Result<(), Error> {
        let level = <E::Level as LevelMarker>::LEVEL;
        if level >= self.level {
            return Ok(());
        }
        Err(Error::Misuse(format!(
            "a nested save with a proof at the {} level would {action} a row of `{}`, a {level} row, \
             above the proof's level: save the {level} row with a proof at its level \
             (`Entity::{action}(am).exec(&lock)`, or its own nested save)",
            self.level,
            sea_orm::EntityName::table_name(&E::default()),
        )))
    }
}

/// A hierlock error, carried through SeaORM's nested save as a `DbErr`
/// (`Error::from(DbErr)` takes it back out).
#[derive(Debug)]
pub(crate) struct Carried(pub(crate) Error);

impl std::fmt::Display for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Carried {}

/// `error` as the `DbErr` a nested save returns; a misuse names the flat
/// writes.
fn carried(error: Error) -> DbErr {
    carry(match error {
        Error::Misuse(text) => Error::Misuse(format!(
            "{text} (in a nested save; write the rows flat with the proof instead: \
             `Entity::insert(am).exec(&lock)`, `update`, `delete`)"
        )),
        other => other,
    })
}

/// `error` as the `DbErr` a nested save returns.
fn carry(error: Error) -> DbErr {
    DbErr::Query(sea_orm::RuntimeErr::SqlxError(Arc::new(
        sea_orm::sqlx::Error::Configuration(Box::new(Carried(error))),
    )))
}

/// The hierlock error a nested save carried in `err`, if any.
pub(crate) fn take_carried(err: DbErr) -> Result<Error, DbErr> {
    let DbErr::Query(sea_orm::RuntimeErr::SqlxError(source)) = err else {
        return Err(err);
    };
    let is_carried = matches!(&*source, sea_orm::sqlx::Error::Configuration(inner) if inner.is::<Carried>());
    if !is_carried {
        return Err(DbErr::Query(sea_orm::RuntimeErr::SqlxError(source)));
    }
    match Arc::try_unwrap(source) {
        Ok(sea_orm::sqlx::Error::Configuration(inner)) => match inner.downcast::<Carried>() {
            Ok(carried) => Ok(carried.0),
            Err(_) => Err(DbErr::Custom("a nested save failed".to_owned())),
        },
        Ok(other) => Err(DbErr::Query(sea_orm::RuntimeErr::SqlxError(Arc::new(other)))),
        // Shared (cloned): the text is all there is.
        Err(shared) => Ok(Error::Misuse(shared.to_string())),
    }
}

/// The future of a row write in a nested save.
pub type NestedFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DbErr>> + Send + 'a>>;

/// `write` on the nested save's connection, or the refusal.
fn refused_or<'a, T: Send + 'a>(
    nested: Result<&'a NestedTxn, DbErr>,
    write: impl FnOnce(&'a NestedTxn) -> NestedFuture<'a, T>,
) -> NestedFuture<'a, T> {
    match nested {
        Ok(nested) => write(nested),
        Err(refused) => Box::pin(std::future::ready(Err(refused))),
    }
}

/// The inherent `insert` of a protected dense entity's raw `ActiveModel`:
/// the row checked against the nested save's proof, then written as
/// SeaORM's `ActiveModel::insert` (its `before_save` / `after_save`).
#[doc(hidden)]
pub fn insert<'a, E, C>(model: E::ActiveModel, db: &'a C) -> NestedFuture<'a, E::Model>
where
    E: Protect,
    E::Model: Send,
    E::ActiveModel: ActiveModelBehavior + Send,
    C: RawWrite + ?Sized,
{
    save::<E, C>(model, db, Save::Insert)
}

/// The inherent `update` of a protected dense entity's raw `ActiveModel`,
/// checked as [`insert`]: the stored row and, if it moves, its new node.
#[doc(hidden)]
pub fn update<'a, E, C>(model: E::ActiveModel, db: &'a C) -> NestedFuture<'a, E::Model>
where
    E: Protect,
    E::Model: Send,
    E::ActiveModel: ActiveModelBehavior + Send,
    C: RawWrite + ?Sized,
{
    save::<E, C>(model, db, Save::Update)
}

/// Which row a nested save writes.
#[derive(Clone, Copy)]
enum Save {
    Insert,
    Update,
}

/// [`insert`] and [`update`]: SeaORM's `save` hooks around the row's write
/// under the nested save's proof.
fn save<'a, E, C>(model: E::ActiveModel, db: &'a C, save: Save) -> NestedFuture<'a, E::Model>
where
    E: Protect,
    E::Model: Send,
    E::ActiveModel: ActiveModelBehavior + Send,
    C: RawWrite + ?Sized,
{
    let (verb, insert) = match save {
        Save::Insert => ("insert", true),
        Save::Update => ("update", false),
    };
    let nested = proven::<E, C>(db, verb);
    Box::pin(async move {
        let nested = nested?;
        nested.level_check::<E>(verb).map_err(carried)?;
        let model = ActiveModelBehavior::before_save(model, nested, insert).await?;
        let row = match save {
            Save::Insert => ProtectedInsert::<E>::new(model).run(nested.proof()).await,
            Save::Update => {
                ProtectedUpdate::<E>::new(model)
                    .returning(nested.proof())
                    .await
            }
        }
        .map_err(carried)?;
        E::ActiveModel::after_save(row, nested, insert).await
    })
}

/// The inherent `delete` of a protected dense entity's raw `ActiveModel`,
/// checked as [`insert`]: the stored row.
#[doc(hidden)]
pub fn delete<'a, E, C>(model: E::ActiveModel, db: &'a C) -> NestedFuture<'a, DeleteResult>
where
    E: Protect,
    E::Model: Send,
    E::ActiveModel: ActiveModelBehavior + Send,
    C: RawWrite + ?Sized,
{
    let nested = proven::<E, C>(db, "delete");
    Box::pin(async move {
        let nested = nested?;
        nested.level_check::<E>("delete").map_err(carried)?;
        let model = ActiveModelBehavior::before_delete(model, nested).await?;
        let kept = model.clone();
        let rows_affected = ProtectedDelete::<E>::new(model)
            .counted(nested.proof())
            .await
            .map_err(carried)?;
        ActiveModelBehavior::after_delete(kept, nested).await?;
        let mut deleted = DeleteResult::empty();
        deleted.rows_affected = rows_affected;
        Ok(deleted)
    })
}

/// The inherent `establish_links` of a protected dense entity (SeaORM's
/// `via` relation in a nested save): the junction rows linking `model` to
/// `related`, written as SeaORM's (`delete_leftover`: the links to rows
/// not in `related` are deleted), each a checked row write.
#[doc(hidden)]
pub fn establish_links<'a, M, R, J, C>(
    model: &'a M,
    related: &'a [R],
    delete_leftover: bool,
    db: &'a C,
) -> NestedFuture<'a, ()>
where
    M: ActiveModelTrait + Sync,
    M::Entity: Protect,
    R: ActiveModelTrait + Sync,
    R::Entity: Protect,
    J: Protect + Related<M::Entity> + Related<R::Entity>,
    J::Model: Send + Sync,
    J::ActiveModel: ActiveModelBehavior + From<J::Model> + Send + Sync,
    C: LinkWrite + ?Sized,
{
    let left = <J as Related<M::Entity>>::to();
    let right = <J as Related<R::Entity>>::to();
    refused_or(proven::<J, C>(db, "link"), |nested| {
        links::write::<M, R, J>(model, related, (left, right), delete_leftover, nested)
    })
}

/// The inherent `establish_links_self` (`reverse`: `establish_links_self_rev`,
/// the other side) of a protected dense entity, a `self_ref` `via`
/// relation, as [`establish_links`].
#[doc(hidden)]
pub fn establish_links_self<'a, M, J, C>(
    model: &'a M,
    related: &'a [M],
    reverse: bool,
    delete_leftover: bool,
    db: &'a C,
) -> NestedFuture<'a, ()>
where
    M: ActiveModelTrait + Sync,
    M::Entity: Protect + RelatedSelfVia<J>,
    J: Protect,
    J::Model: Send + Sync,
    J::ActiveModel: ActiveModelBehavior + From<J::Model> + Send + Sync,
    C: LinkWrite + ?Sized,
{
    let mut sides = (
        <M::Entity as RelatedSelfVia<J>>::via().rev(),
        <M::Entity as RelatedSelfVia<J>>::to(),
    );
    if reverse {
        sides = (sides.1, sides.0);
    }
    refused_or(proven::<J, C>(db, "link"), |nested| {
        links::write::<M, M, J>(model, related, sides, delete_leftover, nested)
    })
}

/// The inherent `delete_links` of a protected dense entity (a nested
/// delete of a row with a `via` relation): its junction rows, deleted as
/// a protected `delete_many` (every row checked; one outside the proof:
/// nothing deleted).
#[doc(hidden)]
pub fn delete_links<'a, M, J, C>(model: &'a M, db: &'a C) -> NestedFuture<'a, DeleteResult>
where
    M: ActiveModelTrait + Sync,
    J: Protect + Related<M::Entity>,
    J::Model: Send + Sync,
    C: LinkWrite + ?Sized,
{
    let relations = vec![<J as Related<M::Entity>>::to()];
    refused_or(proven::<J, C>(db, "unlink"), |nested| {
        links::delete::<M, J>(model, relations, nested)
    })
}

/// The inherent `delete_links_self` of a protected dense entity, as
/// [`delete_links`]: the junction rows on either side of the row.
#[doc(hidden)]
pub fn delete_links_self<'a, M, J, C>(model: &'a M, db: &'a C) -> NestedFuture<'a, DeleteResult>
where
    M: ActiveModelTrait + Sync,
    M::Entity: RelatedSelfVia<J>,
    J: Protect,
    J::Model: Send + Sync,
    C: LinkWrite + ?Sized,
{
    let relations = vec![
        <M::Entity as RelatedSelfVia<J>>::via().rev(),
        <M::Entity as RelatedSelfVia<J>>::to(),
    ];
    refused_or(proven::<J, C>(db, "unlink"), |nested| {
        links::delete::<M, J>(model, relations, nested)
    })
}

// Not listed in the errors of a nested write without a proof (which
// name the flat writes).
#[diagnostic::do_not_recommend]
impl<L: LevelMarker> TransactionTrait for Locked<'_, L, Write> {
    type Transaction = NestedTxn;

    fn begin(&self) -> impl Future<Output = Result<NestedTxn, DbErr>> + Send {
        let requests: Arc<[Request]> = self.requests().into();
        let txn = self.txn();
        async move {
            Ok(NestedTxn {
                txn: sea_orm::TransactionTrait::begin(txn).await?,
                requests,
                level: L::LEVEL,
            })
        }
    }
}

// A SeaORM transaction: what a plain dense entity's nested save hands a
// protected related row (its `C::Transaction`, for any `C`), and the
// `NestedTxn` a proof begins. Not listed in the errors of a nested write
// without a proof (which name the proof and the flat writes).
#[diagnostic::do_not_recommend]
impl<T> TransactionTrait for T
where
    T: sea_orm::TransactionTrait<Transaction = T> + TransactionSession + ConnectionTrait + Send,
{
    type Transaction = T;

    fn begin(&self) -> impl Future<Output = Result<T, DbErr>> + Send {
        sea_orm::TransactionTrait::begin(self)
    }
}

// The rows are checked at run time: only a `NestedTxn` writes them.
#[diagnostic::do_not_recommend]
impl<T> RawWrite for T
where
    T: sea_orm::TransactionTrait<Transaction = T> + TransactionSession + ConnectionTrait + Send,
{
    fn nested(&self) -> Option<&NestedTxn> {
        identity::as_nested(self)
    }
}

#[diagnostic::do_not_recommend]
impl<T> LinkWrite for T where
    T: sea_orm::TransactionTrait<Transaction = T> + TransactionSession + ConnectionTrait + Send
{
}

#[sea_orm::entity::prelude::async_trait::async_trait]
impl ConnectionTrait for NestedTxn {
    fn get_database_backend(&self) -> DbBackend {
        self.txn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.txn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.txn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.txn.query_one_raw(stmt).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.txn.query_all_raw(stmt).await
    }

    fn support_returning(&self) -> bool {
        self.txn.support_returning()
    }
}

/// SeaORM's `TransactionTrait::transaction` on the nested save's
/// connection `txn`: `callback`, then commit, or roll back on its error.
async fn run_nested<F, T, E>(
    txn: Result<NestedTxn, DbErr>,
    callback: F,
) -> Result<T, TransactionError<E>>
where
    F: for<'c> FnOnce(&'c NestedTxn) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
        + Send,
    T: Send,
    E: std::fmt::Display + std::fmt::Debug + Send,
{
    let txn = txn.map_err(TransactionError::Connection)?;
    match callback(&txn).await {
        Ok(value) => {
            txn.commit().await.map_err(TransactionError::Connection)?;
            Ok(value)
        }
        Err(e) => {
            txn.rollback().await.map_err(TransactionError::Connection)?;
            Err(TransactionError::Transaction(e))
        }
    }
}

/// SeaORM's `TransactionTrait` for `$ty`, whose transactions are nested
/// saves' connections begun by `$begin` (a write proof's, or a level of a
/// save's).
macro_rules! nested_transactions {
    (impl [$($generics:tt)*] for $ty:ty, $begin:path) => {
        #[sea_orm::entity::prelude::async_trait::async_trait]
        impl<$($generics)*> sea_orm::TransactionTrait for $ty {
            type Transaction = NestedTxn;

            async fn begin(&self) -> Result<NestedTxn, DbErr> {
                $begin(self).await
            }

            async fn begin_with_config(
                &self,
                _isolation_level: Option<IsolationLevel>,
                _access_mode: Option<AccessMode>,
            ) -> Result<NestedTxn, DbErr> {
                $begin(self).await
            }

            async fn begin_with_options(
                &self,
                _options: TransactionOptions,
            ) -> Result<NestedTxn, DbErr> {
                $begin(self).await
            }

            async fn transaction<F, T, E>(&self, callback: F) -> Result<T, TransactionError<E>>
            where
                F: for<'c> FnOnce(
                        &'c NestedTxn,
                    ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
                    + Send,
                T: Send,
                E: std::fmt::Display + std::fmt::Debug + Send,
            {
                run_nested($begin(self).await, callback).await
            }

            async fn transaction_with_config<F, T, E>(
                &self,
                callback: F,
                _isolation_level: Option<IsolationLevel>,
                _access_mode: Option<AccessMode>,
            ) -> Result<T, TransactionError<E>>
            where
                F: for<'c> FnOnce(
                        &'c NestedTxn,
                    ) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'c>>
                    + Send,
                T: Send,
                E: std::fmt::Display + std::fmt::Debug + Send,
            {
                run_nested($begin(self).await, callback).await
            }
        }
    };
}

nested_transactions!(impl [] for NestedTxn, NestedTxn::below);

// A plain dense entity's nested save given the proof (`am.save(&lock)`)
// hands its protected related rows the proof's `NestedTxn`, which checks
// them; its plain rows are written as on any transaction.
nested_transactions!(impl [L: LevelMarker] for Locked<'_, L, Write>, TransactionTrait::begin);

#[sea_orm::entity::prelude::async_trait::async_trait]
impl TransactionSession for NestedTxn {
    async fn commit(self) -> Result<(), DbErr> {
        self.txn.commit().await
    }

    async fn rollback(self) -> Result<(), DbErr> {
        self.txn.rollback().await
    }
}
