//! SeaORM's `Delete::one` given a loaded `ModelEx` of a protected dense
//! entity: refused.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Delete};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        Delete::one(row).exec(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
