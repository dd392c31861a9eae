#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

/// A helper written for any SeaORM entity.
async fn wipe<E: EntityTrait>(txn: &DatabaseTransaction) -> Result<u64, DbErr> {
    Ok(E::delete_many().exec(txn).await?.rows_affected)
}

async fn reset(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    wipe::<account::Entity>(txn).await?;
    Ok(())
}

fn main() {
    let _ = reset;
}
