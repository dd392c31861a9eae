//! The junction of a protected dense entity's `via` relation, protected or
//! plain: which links its nested save writes, and how.
//!
//! SeaORM's nested save links a row to the rows of a `via` field with
//! `model.establish_links(super::<junction>::Entity, ..)` and unlinks them
//! with `model.delete_links(..)`. On a protected entity those calls reach
//! the inherent methods `#[protected]` gives its `ActiveModelEx`, which ask
//! the junction ([`Junction`], [`Unlink`]): a protected junction's rows are
//! checked against the proof, as their flat writes (see `links`); a plain
//! junction's rows are plain rows, written by SeaORM's own
//! `establish_links` / `delete_links` with or without a proof.
//!
//! Whether the junction is protected is known only where its type is:
//! `#[protected]` implements both traits for each junction its `Model`'s
//! `via` fields name, and picks the kind there with [`Probe`], whose
//! `junction()` resolves to `Checked` when the junction implements
//! [`Protect`] and to `Unchecked` otherwise (method resolution prefers
//! the impl that needs no auto-reference). A protected junction therefore
//! never takes the plain path.

use std::marker::PhantomData;

use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ConnectionTrait, DeleteResult, EntityTrait,
    IntoActiveModel, Related,
};

use super::{LinkWrite, NestedFuture};
use crate::guarantee::protect::Protect;

/// The junction `Self` of a `via` relation from `M`'s rows to `R`'s:
/// links a row to related rows in a nested save.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the junction of a `via` field of this protected entity",
    label = "links through a junction no `via` field names",
    note = "a protected entity links rows through the junctions its `via` fields name (`#[sea_orm(has_many, via = \"junction\")]`); write other links flat with the proof: `junction::Entity::insert(am).exec(&lock)`"
)]
pub trait Junction<M, R>: Sized {
    /// Link `model` to each of `related` (`delete_leftover`: unlink the
    /// rows not among them), as SeaORM's `establish_links`.
    fn establish<'a, C>(
        model: &'a M,
        related: &'a [R],
        delete_leftover: bool,
        db: &'a C,
    ) -> NestedFuture<'a, ()>
    where
        C: LinkWrite + ConnectionTrait;
}

/// The junction `Self` of a `via` relation of `M`'s rows: unlinks a row
/// deleted in a nested delete.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the junction of a `via` field of this protected entity",
    label = "unlinks through a junction no `via` field names",
    note = "a protected entity unlinks rows through the junctions its `via` fields name; delete other links with the proof: `junction::Entity::delete_many().filter(..).exec(&lock)`"
)]
pub trait Unlink<M>: Sized {
    /// Delete `model`'s links, as SeaORM's `delete_links`.
    fn unlink<'a, C>(model: &'a M, db: &'a C) -> NestedFuture<'a, DeleteResult>
    where
        C: LinkWrite + ConnectionTrait;
}

/// Picks the kind of the junction `J` where `J` is a known type:
/// `(&Probe::<J>::new()).junction()`.
pub struct Probe<J>(PhantomData<J>);

impl<J> Probe<J> {
    /// The probe of `J`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

/// The kind of a protected junction (see [`Probe`]).
pub trait ProtectedJunction<J> {
    /// `Checked`: the links checked against the proof.
    fn junction(&self) -> Checked<J>;
}

impl<J: Protect> ProtectedJunction<J> for Probe<J> {
    fn junction(&self) -> Checked<J> {
        Checked(PhantomData)
    }
}

/// The kind of a plain junction (see [`Probe`]).
pub trait PlainJunction<J> {
    /// `Unchecked`: SeaORM's own links.
    fn junction(&self) -> Unchecked<J>;
}

impl<J> PlainJunction<J> for &Probe<J> {
    fn junction(&self) -> Unchecked<J> {
        Unchecked(PhantomData)
    }
}

/// A protected junction: each link checked against the proof.
pub struct Checked<J>(PhantomData<J>);

impl<J> Checked<J> {
    /// See [`Junction::establish`].
    pub fn establish<'a, M, R, C>(
        &self,
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
        super::establish_links::<M, R, J, C>(model, related, delete_leftover, db)
    }

    /// See [`Unlink::unlink`].
    pub fn unlink<'a, M, C>(&self, model: &'a M, db: &'a C) -> NestedFuture<'a, DeleteResult>
    where
        M: ActiveModelTrait + Sync,
        J: Protect + Related<M::Entity>,
        J::Model: Send + Sync,
        C: LinkWrite + ?Sized,
    {
        super::delete_links::<M, J, C>(model, db)
    }
}

/// A plain junction: SeaORM's own links.
pub struct Unchecked<J>(PhantomData<J>);

impl<J> Unchecked<J> {
    /// See [`Junction::establish`].
    pub fn establish<'a, M, R, C>(
        &self,
        model: &'a M,
        related: &'a [R],
        delete_leftover: bool,
        db: &'a C,
    ) -> NestedFuture<'a, ()>
    where
        M: ActiveModelTrait + Sync,
        R: ActiveModelTrait + Sync,
        J: EntityTrait + Related<M::Entity> + Related<R::Entity>,
        J::Model: IntoActiveModel<J::ActiveModel>,
        J::ActiveModel: ActiveModelBehavior + Send,
        C: ConnectionTrait,
    {
        Box::pin(ActiveModelTrait::establish_links::<J, R::Entity, R, C>(
            model,
            J::default(),
            related,
            delete_leftover,
            db,
        ))
    }

    /// See [`Unlink::unlink`].
    pub fn unlink<'a, M, C>(&self, model: &'a M, db: &'a C) -> NestedFuture<'a, DeleteResult>
    where
        M: ActiveModelTrait + Sync,
        J: EntityTrait + Related<M::Entity>,
        C: ConnectionTrait,
    {
        Box::pin(ActiveModelTrait::delete_links::<J, C>(model, J::default(), db))
    }
}
