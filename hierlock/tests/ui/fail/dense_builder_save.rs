//! `ActiveModel::builder()` of a protected dense entity, its setters and
//! `save`: SeaORM's nested builder is refused.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let _ = account::ActiveModel::builder()
        .set_user_id(1)
        .set_name("main")
        .save(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = write;
}
