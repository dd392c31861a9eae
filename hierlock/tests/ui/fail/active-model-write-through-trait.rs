#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseTransaction, DbErr};

async fn open(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    ActiveModelTrait::insert(row, txn).await?;
    Ok(())
}

fn main() {
    let _ = open;
}
