//! The same query as `migrate-query-with-facade`, with the protected entity
//! in a crate of its own (as most services keep their entities): from an
//! entity with a single `Related` impl, rustc's own "mismatched types"
//! names what to write, `Table`.
#![allow(dead_code)]

use hierlock_layout_entities::account;

pub mod note {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "note")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub account_id: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "hierlock_layout_entities::account::Table",
            from = "Column::AccountId",
            to = "hierlock_layout_entities::account::Column::Id"
        )]
        Account,
    }

    impl Related<hierlock_layout_entities::account::Table> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

use hierlock::sea_orm::{DatabaseConnection, DbErr, EntityTrait};

async fn notes_with_accounts(db: &DatabaseConnection) -> Result<(), DbErr> {
    let _ = note::Entity::find()
        .find_also_related(account::Entity)
        .all(db)
        .await?;
    Ok(())
}

fn main() {}
