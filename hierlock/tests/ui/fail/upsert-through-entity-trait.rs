#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::sea_query::OnConflict;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr, EntityTrait};

async fn upsert(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    <account::Entity as EntityTrait>::insert(row)
        .on_conflict(
            OnConflict::column(account::Column::Id)
                .update_column(account::Column::Balance)
                .to_owned(),
        )
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = upsert;
}
