//! `ActiveModelEx::delete` of a protected dense entity: SeaORM's nested write
//! (it would write the row and its related rows without a lock) does not
//! compile, even on the `ActiveModelEx` reached through `Table`.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        let _ = ActiveModelEx::from(row).delete(txn).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
