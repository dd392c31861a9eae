//! The protected `Entity::update` given an `ActiveModelEx` (through `Table`):
//! refused, since its related rows would not be written, and not with the
//! proof; the error says to write each row.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, EntityTrait};
use hierlock::{Locked, proof::AccountLevel};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(lock: &Locked<'_, AccountLevel>, txn: &DatabaseTransaction) -> Result<(), hierlock::Error> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        account::Entity::update(ActiveModelEx::from(row))
            .exec(lock)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
