//! A protected dense entity's `via` field through a plain junction to a plain
//! entity: its links are written under the proof, so the junction and the
//! entity it reaches must be protected too (or the field becomes an
//! `impl Related`).

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
        #[sea_orm(belongs_to, from = "tag_id", to = "id")]
        pub tag: BelongsTo<super::tag::Entity>,
    }

    impl Related<super::account::Entity> for Entity {
        fn to() -> RelationDef {
            Entity::belongs_to(super::account::Entity)
                .from(Column::AccountId)
                .to(super::account::Column::Id)
                .into()
        }
    }

    impl ActiveModelBehavior for ActiveModel {}
}

fn main() {}
