//! A plain dense entity's `via` field through a protected junction: the
//! plain entity's nested save would write the junction's rows with SeaORM's
//! own statements, no lock. Refused at the plain entity's model (a junction
//! with only the two foreign keys can stay plain; a protected one is
//! written flat with the proof).

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
        #[sea_orm(has_many, via = "account_tag")]
        pub accounts: HasMany<super::account::Entity>,
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
