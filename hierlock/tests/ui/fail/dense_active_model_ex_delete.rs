//! `ActiveModelEx::delete` of a protected dense entity: SeaORM's nested write
//! (it would write the row and its related rows without a lock) does not
//! compile, even on the `ActiveModelEx` reached through `Table`.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(db).await? {
        let _ = ActiveModelEx::from(row).delete(db).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
