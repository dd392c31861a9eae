//! `ModelEx::delete` (a loaded row and its related rows, deleted without a
//! lock): does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        row.delete(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
