//! # The entities of the migration guide, after the change
//!
//! What `sea-orm-cli generate entity --lib` wrote for five tables (`user`,
//! `account`, `resource`, `note`, `tag`), with `user`, `account` and
//! `resource` made protected: each one's items moved from its file into an
//! inline module here, under `#[hierlock::protected(..)]`. That is the whole
//! change to those three; their relations still name `super::..::Entity` as
//! generated. The plain `note` (compact) stays as generated; the plain `tag`
//! (dense) relates to the protected `resource` with an `impl Related` in
//! place of its generated relation field.
//! `prelude.rs` is as generated.
//!
//! `docs/migrating.md` walks through it; the migration crate beside this one
//! (`examples/migrating/migration`) creates the tables and runs a locked
//! write: `cargo test -p hierlock-migrating-migration`.

pub mod prelude;

pub mod note;
pub mod tag;

/// Users: the root of the lock hierarchy.
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
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Accounts of a user.
#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
    #[sea_orm(table_name = "account")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub user_id: i32,
        pub name: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(has_many = "super::note::Entity")]
        Note,
        #[sea_orm(has_many = "super::resource::Entity")]
        Resource,
        #[sea_orm(
            belongs_to = "super::user::Entity",
            from = "Column::UserId",
            to = "super::user::Column::Id",
            on_update = "NoAction",
            on_delete = "Cascade"
        )]
        User,
    }

    impl Related<super::note::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Note.def()
        }
    }

    impl Related<super::resource::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Resource.def()
        }
    }

    impl Related<super::user::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::User.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Resources of an account: each row carries its user's and its account's
/// IDs, which is what `#[protected]` reads to know which lock covers it.
#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, DeriveEntityModel, Eq)]
    #[sea_orm(table_name = "resource")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i32,
        pub user_id: i32,
        pub account_id: i32,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::account::Entity",
            from = "Column::AccountId",
            to = "super::account::Column::Id",
            on_update = "NoAction",
            on_delete = "Cascade"
        )]
        Account,
        #[sea_orm(has_many = "super::tag::Entity")]
        Tag,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl Related<super::tag::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Tag.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}
