#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr, Delete};

async fn close(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        ..Default::default()
    };
    Delete::one(row).exec(txn).await?;
    Ok(())
}

fn main() {
    let _ = close;
}
