//! Protected entities in SeaORM's dense format, shared by the ui tests of
//! their write paths: user -> account -> resource, resource <-> tag
//! through the junction `resource_tag`, unique keys `user.email` and
//! `account.(user_id, name)`.
#![allow(dead_code)]

#[hierlock::protected(level = user, user = id)]
pub mod user {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        #[sea_orm(unique)]
        pub email: String,
        #[sea_orm(has_many)]
        pub accounts: HasMany<super::account::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        #[sea_orm(unique_key = "owner_name")]
        pub user_id: i64,
        #[sea_orm(unique_key = "owner_name")]
        pub name: String,
        #[sea_orm(belongs_to, from = "user_id", to = "id")]
        pub user: HasOne<super::user::Entity>,
        #[sea_orm(has_many)]
        pub resources: HasMany<super::resource::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
pub mod resource {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "resources")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub account_id: i64,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: HasOne<super::account::Entity>,
        #[sea_orm(has_many, via = "resource_tag")]
        pub tags: HasMany<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = user, user = user_id)]
pub mod tag {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "tags")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = resource, user = user_id, account = account_id, resource = resource_id)]
pub mod resource_tag {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "resource_tags")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub resource_id: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub tag_id: i64,
        pub user_id: i64,
        pub account_id: i64,
        #[sea_orm(belongs_to, from = "resource_id", to = "id")]
        pub resource: HasOne<super::resource::Entity>,
        #[sea_orm(belongs_to, from = "tag_id", to = "id")]
        pub tag: HasOne<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}
