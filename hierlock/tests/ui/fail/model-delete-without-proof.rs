#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn close(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(txn).await? {
        row.delete(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = close;
}
