//! A query that takes an entity is given a protected entity's `Entity`,
//! the facade: the error names `account::Table`.
#![allow(dead_code)]

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "account")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub user_id: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(has_many = "super::note::Entity")]
        Note,
    }

    impl Related<super::note::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Note.def()
        }
    }
}

pub mod note {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "note")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub account_id: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::account::Table",
            from = "Column::AccountId",
            to = "super::account::Column::Id"
        )]
        Account,
    }

    impl Related<super::account::Table> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

use hierlock::sea_orm::{DatabaseConnection, DbErr, EntityTrait};

async fn notes(db: &DatabaseConnection) -> Result<(), DbErr> {
    let _ = note::Entity::find()
        .find_also_related(account::Entity)
        .all(db)
        .await?;
    Ok(())
}

fn main() {
    let _ = notes;
}
