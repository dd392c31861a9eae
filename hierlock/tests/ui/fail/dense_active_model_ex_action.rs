//! `ActiveModelEx::action` of a protected dense entity (what `save`, `insert`
//! and `update` run): does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{ActiveModelAction, DatabaseTransaction, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        let _ = ActiveModelEx::from(row)
            .action(ActiveModelAction::Save, txn)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
