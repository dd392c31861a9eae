#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::{ColumnTrait, DatabaseTransaction, DbErr, QueryFilter};

async fn reset(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    account::Table::delete_many()
        .filter(account::Column::Balance.eq(0))
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = reset;
}
