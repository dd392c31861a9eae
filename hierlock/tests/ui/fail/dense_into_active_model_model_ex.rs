//! SeaORM's `IntoActiveModel` for a loaded `ModelEx` of a protected dense
//! entity: refused.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(txn).await? {
        let am: ActiveModelEx = row.into_active_model();
        let _ = am;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
