//! Entities in a crate of their own, as most applications keep them:
//! `user`, `account` and `resource` protected at their levels, and a plain
//! `audit` entity, with relations both ways between plain and protected
//! entities.
//!
//! The crates depending on this one (`tests/crates/service`) define
//! entities of their own, protected and plain: before the facade expansion
//! they failed with E0119 (conflicting `ActiveModelBehavior` impls).

#[hierlock::protected(level = user, user = id)]
pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "layout_users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
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
}

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "layout_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub name: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::user::Entity",
            from = "Column::UserId",
            to = "super::user::Column::Id"
        )]
        User,
        #[sea_orm(has_many = "super::resource::Entity")]
        Resource,
        /// protected → plain
        #[sea_orm(has_many = "super::audit::Entity")]
        Audit,
    }

    impl Related<super::user::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::User.def()
        }
    }

    impl Related<super::resource::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Resource.def()
        }
    }

    impl Related<super::audit::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Audit.def()
        }
    }
}

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "layout_resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        #[sea_orm(
            belongs_to = "super::account::Entity",
            from = "Column::AccountId",
            to = "super::account::Column::Id"
        )]
        Account,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }
}

/// A plain SeaORM entity next to the protected ones: written as usual.
pub mod audit {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "layout_audit")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub account_id: i64,
        pub note: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        /// plain → protected: a protected entity is named by its `Table`.
        #[sea_orm(
            belongs_to = "super::account::Entity",
            from = "Column::AccountId",
            to = "super::account::Column::Id"
        )]
        Account,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Relation::Account.def()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}
