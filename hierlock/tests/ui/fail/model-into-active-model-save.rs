#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr};

async fn credit(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(txn).await? {
        let mut am = row.into_active_model();
        am.balance = Set(100);
        am.save(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = credit;
}
