//! `account::ActiveModelEx`, as SeaORM's dense format names it: not available
//! on a protected entity; the error says how to write instead.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let _ = account::ActiveModelEx::new().save(txn).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
