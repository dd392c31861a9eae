//! `#[sea_orm::compact_model]` on a protected entity: refused (its
//! `ActiveModelEx` would write related rows without a lock).

#[hierlock::protected(level = user, user = id)]
pub mod user {
    use sea_orm::entity::prelude::*;

    #[sea_orm::compact_model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "user")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

fn main() {}
