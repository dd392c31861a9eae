//! SeaORM's raw active model of a protected compact entity, named through
//! `EntityTrait`: its write methods (`delete` and `update_without_returning`
//! included, which SeaORM's trait bounds would let through) do not compile.

#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseTransaction, DbErr, EntityTrait};

async fn close(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let mut row = <<account::Table as EntityTrait>::ActiveModel as ActiveModelTrait>::default();
    row.id = Set(1);
    row.delete(txn).await?;
    Ok(())
}

fn main() {
    let _ = close;
}
