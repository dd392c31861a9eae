#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Delete};

async fn wipe(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    Delete::many(account::Entity).exec(txn).await?;
    Ok(())
}

fn main() {
    let _ = wipe;
}
