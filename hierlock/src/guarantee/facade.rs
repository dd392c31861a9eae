//! A protected module's facade `Entity` where SeaORM takes an entity.
//!
//! The facade is not a SeaORM entity: that would let SeaORM write it without
//! a lock. Named where SeaORM takes one (a relation, `impl Related<..>`,
//! `Schema::create_table_from_entity`, `Update::many(..)`), rustc alone says
//! "the trait bound `account::Entity: EntityTrait` is not satisfied", and
//! names no fix. So `#[protected]` implements `EntityTrait` and its
//! supertraits for the facade under a bound on `&()` that nothing meets: a
//! trait generated per entity, whose `#[diagnostic::on_unimplemented]` names
//! the fix (`account::Table`), with [`NotAnEntity`] as its supertrait, which
//! only hierlock could implement for `&()` (the orphan rule), and does not.
//! rustc then reports that bound. The impl's model types are [`NotAModel`],
//! which has no values: they exist only to make the impl well-formed.
//!
//! [`RelationTarget`] is the other side: what lets the relations inside a
//! protected module name another protected module's `Entity`.

use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;

use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ActiveValue, DbErr, EntityTrait, FromQueryResult,
    ModelTrait, QueryResult, Value, sea_query::ArrayType,
};

/// The supertrait of the bound of a facade's `EntityTrait` impl, which is
/// on `&()`: only hierlock could implement it for `&()` (the orphan rule), so
/// no crate can meet the bound.
#[diagnostic::on_unimplemented(
    message = "hierlock's guards of protected entities are sealed: `{Self}` cannot meet them",
    label = "this impl would make a protected facade a SeaORM entity, writable without a lock",
    note = "where SeaORM takes an entity, name the protected module's `Table`; write through its `Entity` with a lock proof"
)]
pub trait NotAnEntity {}

/// A protected module's facade `Entity` (implemented by `#[protected]`):
/// the only types [`NotAModel`] is a SeaORM model of.
pub trait Facade {}

/// The model types of a facade's `EntityTrait` impl: no value exists.
pub enum NotAModel<E> {
    #[doc(hidden)]
    Never(Infallible, PhantomData<E>),
}

impl<E> NotAModel<E> {
    fn never(&self) -> ! {
        match *self {
            NotAModel::Never(never, _) => match never {},
        }
    }
}

impl<E> Clone for NotAModel<E> {
    fn clone(&self) -> Self {
        self.never()
    }
}

impl<E> fmt::Debug for NotAModel<E> {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.never()
    }
}

impl<E: EntityTrait + Facade> ModelTrait for NotAModel<E> {
    type Entity = E;

    fn get(&self, _: E::Column) -> Value {
        self.never()
    }

    fn get_value_type(_: E::Column) -> ArrayType {
        unreachable_facade()
    }

    fn try_set(&mut self, _: E::Column, _: Value) -> Result<(), DbErr> {
        self.never()
    }
}

impl<E> FromQueryResult for NotAModel<E> {
    fn from_query_result(_: &QueryResult, _: &str) -> Result<Self, DbErr> {
        Err(DbErr::Custom(
            "a protected facade is not a SeaORM entity".to_owned(),
        ))
    }
}

impl<E: EntityTrait + Facade> ActiveModelTrait for NotAModel<E> {
    type Entity = E;

    fn take(&mut self, _: E::Column) -> ActiveValue<Value> {
        self.never()
    }

    fn get(&self, _: E::Column) -> ActiveValue<Value> {
        self.never()
    }

    fn set_if_not_equals(&mut self, _: E::Column, _: Value) {
        self.never()
    }

    fn try_set(&mut self, _: E::Column, _: Value) -> Result<(), DbErr> {
        self.never()
    }

    fn not_set(&mut self, _: E::Column) {
        self.never()
    }

    fn is_not_set(&self, _: E::Column) -> bool {
        self.never()
    }

    fn default() -> Self {
        unreachable_facade()
    }

    fn default_values() -> Self {
        unreachable_facade()
    }

    fn reset(&mut self, _: E::Column) {
        self.never()
    }
}

impl<E: EntityTrait + Facade> ActiveModelBehavior for NotAModel<E> {}

/// The body of an item of a facade's `EntityTrait` impl, whose bound is
/// never met: never called.
pub fn unreachable_facade<T>() -> T {
    unreachable!("a protected facade was used as a SeaORM entity")
}

/// The SeaORM entity a relation inside a protected module names: an
/// entity's own path (`super::note::Entity`), or a protected module's
/// `Entity`, which is its facade, read as its `Table`. `#[protected]`
/// rewrites `..::Entity` in the module's relations to
/// `<..::Entity as RelationTarget>::Table`, so that relations as
/// `sea-orm-cli` writes them keep compiling.
pub trait RelationTarget {
    /// The SeaORM entity.
    type Table: EntityTrait;
}

impl<E: EntityTrait> RelationTarget for E {
    type Table = E;
}

/// The SeaORM entity of a relation's target, as a value
/// (`Entity::has_many(relation_target(super::account::Entity))`).
pub fn relation_target<E: RelationTarget>(_: E) -> E::Table {
    Default::default()
}
