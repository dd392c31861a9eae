//! SeaORM 2's entity formats, told apart by `Model`'s attributes:
//! [`compact`] (`#[derive(DeriveEntityModel)]` with a `Relation` enum) and
//! [`dense`] (`#[sea_orm::model]`, relations as fields) are both taken; the
//! dense one with its extra write paths sealed.

pub(super) mod compact;
pub(super) mod dense;
