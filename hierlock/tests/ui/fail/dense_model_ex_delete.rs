//! `ModelEx::delete` (a loaded row and its related rows, deleted without a
//! lock): does not compile.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr};

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::load().one(db).await? {
        row.delete(db).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
