#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr, EntityTrait};

async fn credit(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        balance: Set(100),
        ..Default::default()
    };
    <account::Entity as EntityTrait>::update(row)
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = credit;
}
