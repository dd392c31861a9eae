//! A protected entity and a locked write, as an application writes them.

use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction};
use hierlock::{Locker, hierlocked};

/// An account, writable only under its lock.
#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hierlock_packaging_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

/// Open account `id` of `user` with `balance`, under the account's lock.
#[hierlocked(user = user, account = id, locker = locker)]
pub async fn open(
    locker: &Locker,
    txn: &DatabaseTransaction,
    user: i64,
    id: i64,
    balance: i64,
) -> hierlock::Result<()> {
    let row = account::ActiveModel {
        id: Set(id),
        user_id: Set(user),
        balance: Set(balance),
    };
    account::Entity::insert(row).exec(&lock).await?;
    Ok(())
}

/// A wallet in SeaORM 2's dense format, with its coins: writable only
/// under a lock, and saved with its coins in one nested insert.
#[hierlock::protected(level = account, user = user_id, account = id)]
pub mod wallet {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hierlock_packaging_wallets")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        #[sea_orm(has_many)]
        pub coins: HasMany<super::coin::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// A coin of a wallet (dense format).
#[hierlock::protected(level = resource, user = user_id, account = wallet_id, resource = id)]
pub mod coin {
    use hierlock::sea_orm::entity::prelude::*;

    #[sea_orm::model]
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "hierlock_packaging_coins")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub wallet_id: i64,
        #[sea_orm(belongs_to, from = "wallet_id", to = "id")]
        pub wallet: HasOne<super::wallet::Entity>,
    }

    impl ActiveModelBehavior for ActiveModel {}
}

/// Create wallet `id` of `user` with `coins`, in one nested insert under
/// the wallet's lock.
#[hierlocked(user = user, account = id, locker = locker)]
pub async fn fill(
    locker: &Locker,
    txn: &DatabaseTransaction,
    user: i64,
    id: i64,
    coins: &[i64],
) -> hierlock::Result<wallet::ModelEx> {
    let mut nested = wallet::NestedActiveModel::from(wallet::ActiveModel {
        id: Set(id),
        user_id: Set(user),
    });
    for &coin in coins {
        nested = nested.add_coin(coin::ActiveModel {
            id: Set(coin),
            user_id: Set(user),
            ..Default::default()
        });
    }
    // SeaORM's nested save answers with a `DbErr`; hierlock's `Error` carries it.
    Ok(nested.insert(&lock).await?)
}
