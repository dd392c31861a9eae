//! A protected dense entity's `via` field through a protected junction to a
//! plain entity: the junction's rows are checked against the proof, and
//! their ancestor IDs come from the deeper protected side, which a plain
//! entity has not. Refused at the field (a junction with only the two
//! foreign keys can stay plain, and its links are written as SeaORM's).

#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "account")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub user_id: i64,
        #[sea_orm(has_many, via = "account_tag")]
        pub tags: HasMany<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod tag {
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "tag")]
    pub struct Model {
        #[sea_orm(primary_key)]
        pub id: i64,
        pub label: String,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

#[hierlock::protected(level = account, user = user_id, account = account_id)]
pub mod account_tag {
    use sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "account_tag")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub account_id: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub tag_id: i64,
        pub user_id: i64,
        #[sea_orm(belongs_to, from = "account_id", to = "id")]
        pub account: BelongsTo<super::account::Entity>,
        #[sea_orm(belongs_to, from = "tag_id", to = "id")]
        pub tag: BelongsTo<super::tag::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

fn main() {}
