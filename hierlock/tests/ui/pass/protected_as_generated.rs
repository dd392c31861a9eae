//! Entities as `sea-orm-cli generate entity` writes them, made protected by
//! adding `#[protected]` and nothing else: relations between protected
//! entities still name `super::..::Entity` (belongs_to, has_many, has_one,
//! `Related`, `Linked`), `impl ActiveModelBehavior for ActiveModel {}` stays,
//! and the prelude is as generated. Plain entities beside them, compact and
//! dense, name the protected ones' `Table`; a migration creates the tables
//! from `Table`.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::sea_orm::{
    ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, ModelTrait, Schema,
};

pub mod prelude {
    pub use super::account::Entity as Account;
    pub use super::note::Entity as Note;
    pub use super::profile::Entity as Profile;
    pub use super::tag::Entity as Tag;
    pub use super::user::Entity as User;
}

#[hierlock::protected(level = user, user = id)]
pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
    #[sea_orm(table_name = "user")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub name: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(has_many = "super::account::Entity")]
        Account,
        #[sea_orm(has_one = "super::profile::Entity")]
        Profile,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl Related<super::profile::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Profile.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}

    /// `Linked`, naming other entities by their `Entity`.
    pub struct Accounts;

    impl Linked for Accounts {
        type FromEntity = Entity;
        type ToEntity = super::account::Entity;

        fn link(&self) -> Vec<RelationDef> {
            vec![Relation::Account.def()]
        }
    }

    pub struct Notes;

    impl Linked for Notes {
        type FromEntity = Entity;
        type ToEntity = super::note::Entity;

        fn link(&self) -> Vec<RelationDef> {
            vec![
                super::account::Relation::User.def().rev(),
                super::account::Relation::Note.def(),
            ]
        }
    }
}

#[hierlock::protected(level = user, user = user_id)]
pub mod profile {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
    #[sea_orm(table_name = "profile")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        #[sea_orm(unique)]
        pub user_id: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::user::Entity",
            from = "Column::UserId",
            to = "super::user::Column::Id",
            on_update = "NoAction",
            on_delete = "Cascade"
        )]
        User,
    }

    impl Related<super::user::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::User.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
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
        #[sea_orm(has_many = "super::tag::Entity")]
        Tag,
        #[sea_orm(
            belongs_to = "super::user::Entity",
            from = "Column::UserId",
            to = "super::user::Column::Id"
        )]
        User,
    }

    impl Related<super::note::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Note.def()
        }
    }

    impl Related<super::tag::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Tag.def()
        }
    }

    impl Related<super::user::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::User.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Plain, compact format: names the protected `account` by its `Table`.
pub mod note {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
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

/// Plain, dense format: relates to the protected `account` with a `Related`
/// impl (a relation field would need a dense target).
pub mod tag {
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
    #[sea_orm(table_name = "tag")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub account_id: i32,
        #[sea_orm(unique)]
        pub label: String,
    }

    impl Related<super::account::Table> for Entity {
        fn to() -> RelationDef {
            Entity::belongs_to(super::account::Table)
                .from(Column::AccountId)
                .to(super::account::Column::Id)
                .into()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

async fn reads(db: &DatabaseConnection) -> Result<(), DbErr> {
    // The prelude's names are the protected facades.
    let users = prelude::User::find().all(db).await?;
    let _ = prelude::Account::find_by_id(1).one(db).await?;
    // Relations between protected entities, as generated.
    let _ = user::Entity::find()
        .find_with_related(account::Table)
        .all(db)
        .await?;
    let _ = user::Entity::find()
        .find_also_related(profile::Table)
        .all(db)
        .await?;
    let _ = account::Entity::find_related::<user::Table>()
        .all(db)
        .await?;
    if let Some(first) = users.into_iter().next() {
        let _ = first.find_related(account::Table).all(db).await?;
        let _ = first.find_linked(user::Accounts).all(db).await?;
        let _ = first.find_linked(user::Notes).all(db).await?;
    }
    // Protected ↔ plain, compact and dense.
    let _ = note::Entity::find()
        .find_also_related(account::Table)
        .all(db)
        .await?;
    let _ = tag::Entity::find()
        .find_also_related(account::Table)
        .all(db)
        .await?;
    let _ = account::Entity::find()
        .find_with_related(tag::Entity)
        .all(db)
        .await?;
    let _ = account::Entity::find_related::<note::Entity>()
        .all(db)
        .await?;
    Ok(())
}

async fn migrate(db: &DatabaseConnection) -> Result<(), DbErr> {
    let schema = Schema::new(db.get_database_backend());
    db.execute(&schema.create_table_from_entity(user::Table))
        .await?;
    db.execute(&schema.create_table_from_entity(profile::Table))
        .await?;
    db.execute(&schema.create_table_from_entity(account::Table))
        .await?;
    db.execute(&schema.create_table_from_entity(note::Entity))
        .await?;
    db.execute(&schema.create_table_from_entity(tag::Entity))
        .await?;
    Ok(())
}

fn main() {
    let _ = reads;
    let _ = migrate;
}
