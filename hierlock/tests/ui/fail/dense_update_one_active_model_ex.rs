//! SeaORM's `Update::one` given an `account::ActiveModelEx`: refused.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Update};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        Update::one(account::ActiveModelEx::from(row))
            .exec_without_returning(txn)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
