//! SeaORM's `into_query()` on a protected write: the statement, sent
//! without the proof, would skip its checks; the refusal names `.exec`.

#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, ConnectionTrait, DatabaseTransaction, DbErr};

async fn open(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    let statement = account::Entity::insert(row).into_query();
    txn.execute(&statement).await?;
    Ok(())
}

fn main() {
    let _ = open;
}
