//! `ActiveModelEx::action` of a protected dense entity (what `save`, `insert`
//! and `update` run): does not compile.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{ActiveModelAction, DatabaseConnection, DbErr, EntityTrait};

/// SeaORM's `ActiveModelEx` of the entity, reached through its `Table`.
type ActiveModelEx = <account::Table as EntityTrait>::ActiveModelEx;

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(db).await? {
        let _ = ActiveModelEx::from(row)
            .action(ActiveModelAction::Save, db)
            .await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
