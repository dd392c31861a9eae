//! `Model::cascade_delete` (the row and everything below it, deleted without
//! a lock): does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(txn).await? {
        row.cascade_delete(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
