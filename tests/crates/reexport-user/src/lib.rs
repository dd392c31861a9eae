//! Entities and a repository that reach hierlock only through
//! `hierlock_layout_reexport::hl`: `crate = ..` in `#[protected]` and
//! `#[hierlocked]` makes the generated code name that path.

use hierlock_layout_reexport::hl;
use hl::sea_orm::{ActiveValue::Set, DatabaseTransaction};

#[hl::protected(
    crate = ::hierlock_layout_reexport::hl,
    level = account,
    user = user_id,
    account = id
)]
pub mod wallet {
    use hierlock_layout_reexport::hl::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "reexport_wallets")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// The repository.
pub struct Wallets {
    /// The locker.
    pub locker: hl::Locker,
}

impl hl::HasLocker for Wallets {
    fn locker(&self) -> &hl::Locker {
        &self.locker
    }
}

impl Wallets {
    /// A new wallet, written with the proof.
    #[hl::hierlocked(crate = ::hierlock_layout_reexport::hl, user = user_id, account = id)]
    pub async fn open(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        id: i64,
    ) -> hl::Result<wallet::Model> {
        wallet::Entity::insert(wallet::ActiveModel {
            id: Set(id),
            user_id: Set(user_id),
            balance: Set(0),
        })
        .exec(&lock)
        .await
    }
}
