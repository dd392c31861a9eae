//! The seal of the guards `#[protected]` writes into each protected module.
//!
//! A refused SeaORM write on a protected entity (`am.save(db)`,
//! `model.delete(db)`, `ActiveModel::builder()`) is an inherent function
//! bounded by `&'_ (): G`, where `G` is a trait generated in the entity's
//! module: its `#[diagnostic::on_unimplemented]` names the entity and the
//! protected write to use, so rustc reports hierlock's words at the call.
//! Every such `G` has [`Unmet`] as its supertrait, which only hierlock could
//! implement for `&()` (the orphan rule) and does not: no crate can meet the
//! bound, nor lift it with `impl G for &() {}`.

/// The supertrait of every guard of a protected entity: implemented for no
/// reference, so no crate can meet or lift a guard.
#[diagnostic::on_unimplemented(
    message = "hierlock's guards of protected entities are sealed: `{Self}` cannot meet them",
    label = "this impl would let SeaORM write a protected entity without a lock",
    note = "write protected entities in a `#[hierlocked]` method with its proof: `Entity::insert/update/delete(..).exec(&lock)`"
)]
pub trait Unmet {}
