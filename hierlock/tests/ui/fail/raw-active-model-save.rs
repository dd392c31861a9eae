#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseTransaction, DbErr, EntityTrait};

async fn open(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let mut row = <<account::Table as EntityTrait>::ActiveModel as ActiveModelTrait>::default();
    row.id = Set(1);
    row.user_id = Set(1);
    row.balance = Set(0);
    ActiveModelTrait::save(row, txn).await?;
    Ok(())
}

fn main() {
    let _ = open;
}
