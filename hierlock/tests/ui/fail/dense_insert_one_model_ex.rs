//! SeaORM's `Insert::one` given a loaded `ModelEx` of a protected dense
//! entity: refused (the row would be written without a lock).

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Insert};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        Insert::one(row).exec(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
