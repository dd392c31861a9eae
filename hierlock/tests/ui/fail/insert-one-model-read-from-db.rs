#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Insert};

async fn copy(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(txn).await? {
        Insert::one(row).exec(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = copy;
}
