#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    row.update_without_returning(txn).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
