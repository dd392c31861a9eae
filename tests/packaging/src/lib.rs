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
