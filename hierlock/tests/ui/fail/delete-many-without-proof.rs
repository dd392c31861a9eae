#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ColumnTrait, DatabaseTransaction};

async fn reset(txn: &DatabaseTransaction) -> hierlock::Result<()> {
    account::Entity::delete_many()
        .filter(account::Column::Balance.eq(0))
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = reset;
}
