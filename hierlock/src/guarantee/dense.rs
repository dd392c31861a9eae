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
//! - [`TransactionTrait`]: the bound of every nested write. Nothing
//!   implements it, so each nested write of a protected entity is a compile
//!   error naming the flat, proof-gated writes. Its shape is SeaORM's, so
//!   the generated bodies still type-check; their row writes and junction
//!   links go through inherent methods `#[protected]` adds to the sealed
//!   `ActiveModel` / `ActiveModelEx`, bounded by [`RawWrite`] and
//!   [`LinkWrite`], which the transaction type of [`TransactionTrait`]
//!   carries and nothing else implements.
//! - [`Delete`] and [`ValidatedDeleteOne`]: `delete_by_<key>` becomes a
//!   [`ProtectedDeleteMany`] on the key's filter, which runs with
//!   `.exec(&lock)` and checks every row it would delete.

use std::future::Future;

use sea_orm::{ConnectionTrait, DbErr, TransactionSession};

use super::protect::{ProtectedDeleteMany, Protect};

/// Stands in for `sea_orm::TransactionTrait` in a protected dense entity's
/// module: the bound of `ActiveModelEx::{save, insert, update, delete,
/// action}`, `Model::cascade_delete` and `ModelEx::delete`. Not implemented
/// by any type: those nested writes do not compile.
#[diagnostic::on_unimplemented(
    message = "SeaORM's nested writes of a protected entity would run without a lock: `{Self}` cannot run them",
    label = "writes this row and its related rows with no lock proof",
    note = "`save`, `insert`, `update`, `delete` and `action` of an `ActiveModelEx`, `ModelEx::delete` and `Model::cascade_delete` are not available on a protected entity",
    note = "write each row in a `#[hierlocked]` method with the proof, one statement per row: `Entity::insert(am).exec(&lock)`, `Entity::update(am).exec(&lock)`, `Entity::delete(model).exec(&lock)` (a row's children: `Entity::delete_many().filter(..).exec(&lock)`)"
)]
pub trait TransactionTrait: Sync {
    /// The transaction the nested write runs in.
    type Transaction: ConnectionTrait
        + TransactionSession
        + TransactionTrait<Transaction = Self::Transaction>
        + RawWrite
        + LinkWrite
        + Send;

    /// Begin the nested write's transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Transaction, DbErr>> + Send;
}

/// The bound of the inherent `insert`, `update` and `delete` that
/// `#[protected]` gives a dense entity's raw SeaORM `ActiveModel` (what the
/// nested writes call): not implemented by any type.
#[diagnostic::on_unimplemented(
    message = "the raw SeaORM active model of a protected entity cannot be written: `{Self}` is not a lock proof",
    label = "writes the row with no lock proof",
    note = "write it in a `#[hierlocked]` method with the proof: `Entity::insert(am).exec(&lock)`, `Entity::update(am).exec(&lock)` or `Entity::delete(am).exec(&lock)`, with `am` the protected module's `ActiveModel`"
)]
pub trait RawWrite {}

/// The bound of the inherent `establish_links*` / `delete_links*` that
/// `#[protected]` gives a dense entity's `ActiveModelEx` and raw
/// `ActiveModel`: not implemented by any type.
#[diagnostic::on_unimplemented(
    message = "SeaORM's junction links of a protected entity would be written without a lock: `{Self}` is not a lock proof",
    label = "writes junction rows with no lock proof",
    note = "write the junction rows in a `#[hierlocked]` method with the proof: `junction::Entity::insert(am).exec(&lock)` per link, `junction::Entity::delete_many().filter(..).exec(&lock)` to unlink"
)]
pub trait LinkWrite {}

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
