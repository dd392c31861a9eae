//! A fixture for `docs/clippy.recommended.toml` (this crate's `clippy.toml`
//! is a link to it): with the `disallowed` feature, `src/uses.rs` calls each
//! flagged path once, and `tests/clippy-check.sh` fails unless clippy flags
//! every one of them there and none in the expansion of `#[protected]`.
//! Without the feature the crate is empty, so that the workspace's
//! `cargo clippy -- -D warnings` passes.

/// A protected entity, whose raw `Table` the flagged calls reach.
#[cfg(feature = "disallowed")]
#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    /// An account row.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "accounts")]
    pub struct Model {
        /// The account ID.
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        /// Its user.
        pub user_id: i64,
        /// Its balance.
        pub balance: i64,
    }

    /// No relations.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// A protected junction between accounts and groups, whose rows SeaORM's
/// many-to-many helpers write (`ActiveModelTrait::delete_links`).
#[cfg(feature = "disallowed")]
#[hierlock::protected(level = account, user = user_id, account = account_id)]
pub mod membership {
    use hierlock::sea_orm::entity::prelude::*;

    /// An account's membership of a group.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "memberships")]
    pub struct Model {
        /// The account.
        #[sea_orm(primary_key, auto_increment = false)]
        pub account_id: i64,
        /// The group.
        #[sea_orm(primary_key, auto_increment = false)]
        pub group_id: i64,
        /// The account's user.
        pub user_id: i64,
    }

    /// The account.
    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {
        /// The account.
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
}

#[cfg(feature = "disallowed")]
pub mod uses;
