#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction};

async fn upsert(txn: &DatabaseTransaction) -> hierlock::Result<()> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    account::Entity::insert(row)
        .on_conflict_update([account::Column::Balance])
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = upsert;
}
