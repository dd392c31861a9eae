//! SeaORM's builder methods that the protected builders do not have, each
//! answered in hierlock's words with what to write instead.
//!
//! Code ported from SeaORM's writes (`Entity::update_many()` ..
//! `.exec_with_returning(db)`, `.into_query()`) would otherwise meet rustc's
//! "no method named .. found", which names the builder's type and not the
//! way. Each method here exists only under a bound nothing meets, whose
//! trait carries the words.

use sea_orm::EntityTrait;

use super::{
    ProtectedDelete, ProtectedDeleteMany, ProtectedInsert, ProtectedInsertMany, ProtectedUpdate,
    ProtectedUpdateMany, ProtectedUpsert,
};

mod sealed {
    /// Implemented by nothing: no bound below is ever met.
    pub trait Never {}
}

/// A refusal: a trait that nothing implements, with its words.
macro_rules! refusal {
    ($name:ident, $message:literal, $label:literal, $note:literal) => {
        #[doc(hidden)]
        #[diagnostic::on_unimplemented(message = $message, label = $label, note = $note)]
        pub trait $name: sealed::Never {}
    };
}

refusal!(
    NoStatementOfAProtectedWrite,
    "a protected write hands out no statement: sent without the proof, its checks would not run",
    "the statement of a protected write",
    "write it with `.exec(&lock)`, the proof of a `#[hierlocked]` method whose locks cover its rows"
);

refusal!(
    NoRowsFromAProtectedManyWrite,
    "a protected `update_many` or `delete_many` returns how many rows it wrote, not the rows",
    "not on a protected entity",
    "write with `.exec(&lock)`, then read the rows back with `Entity::find().filter(..).all(lock.txn())`: \
     the locks still hold"
);

refusal!(
    EmptyInsertAlreadyDoesNothing,
    "a protected `insert_many` already does nothing for no rows: remove `.on_empty_do_nothing()`",
    "not needed on a protected entity",
    "`Entity::insert_many(rows).exec(&lock)` returns `Ok(0)` for an empty list, with nothing sent"
);

refusal!(
    UpdateAlreadyValidated,
    "a protected `update` checks its primary key when it runs: remove `.validate()`",
    "not needed on a protected entity",
    "`Entity::update(am).exec(&lock)` fails with `Error::Misuse`, nothing written, when the key is not set"
);

/// `into_query` and `build`, refused on each protected builder.
macro_rules! no_statement {
    ($($builder:ident),*) => {$(
        impl<E: EntityTrait> $builder<E> {
            /// Not available: a protected write runs only with `.exec(&lock)`.
            #[doc(hidden)]
            pub fn into_query<'a>(self) -> std::convert::Infallible
            where
                &'a (): NoStatementOfAProtectedWrite,
            {
                unreachable!("a refused method was called")
            }

            /// Not available: a protected write runs only with `.exec(&lock)`.
            #[doc(hidden)]
            pub fn build<'a, B>(&self, _backend: B) -> std::convert::Infallible
            where
                &'a (): NoStatementOfAProtectedWrite,
            {
                unreachable!("a refused method was called")
            }
        }
    )*};
}

no_statement!(
    ProtectedInsert,
    ProtectedInsertMany,
    ProtectedUpsert,
    ProtectedUpdate,
    ProtectedUpdateMany,
    ProtectedDelete,
    ProtectedDeleteMany
);

/// `exec_with_returning`, refused on the filtered writes.
macro_rules! no_rows {
    ($($builder:ident),*) => {$(
        impl<E: EntityTrait> $builder<E> {
            /// Not available: see [`exec`](Self::exec), which returns how many
            /// rows it wrote.
            #[doc(hidden)]
            pub fn exec_with_returning<'a, P: ?Sized>(self, _lock: &P) -> std::convert::Infallible
            where
                &'a (): NoRowsFromAProtectedManyWrite,
            {
                unreachable!("a refused method was called")
            }
        }
    )*};
}

no_rows!(ProtectedUpdateMany, ProtectedDeleteMany);

impl<E: EntityTrait> ProtectedInsertMany<E> {
    /// Not needed: an empty insert already sends nothing (`Ok(0)`).
    #[doc(hidden)]
    pub fn on_empty_do_nothing<'a>(self) -> std::convert::Infallible
    where
        &'a (): EmptyInsertAlreadyDoesNothing,
    {
        unreachable!("a refused method was called")
    }
}

impl<E: EntityTrait> ProtectedUpdate<E> {
    /// Not needed: the update checks its key when it runs.
    #[doc(hidden)]
    pub fn validate<'a>(self) -> std::convert::Infallible
    where
        &'a (): UpdateAlreadyValidated,
    {
        unreachable!("a refused method was called")
    }
}
