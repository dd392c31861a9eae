//! `Model::into_ex()`, then `ModelEx::delete`: does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(txn).await? {
        row.into_ex().delete(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
