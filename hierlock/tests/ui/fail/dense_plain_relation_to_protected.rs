//! A plain dense entity with a relation field to a protected dense entity:
//! SeaORM's relation fields need a SeaORM entity, and the plain entity's
//! nested `save` would write the protected rows. The error says to relate
//! with `impl Related<super::account::Table>` instead (or to protect the
//! plain entity too).
#![allow(dead_code)]

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "account")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub user_id: i32,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod note {
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "note")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub account_id: i32,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: HasOne<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

fn main() {}
