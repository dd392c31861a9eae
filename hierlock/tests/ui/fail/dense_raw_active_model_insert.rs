//! The raw SeaORM `ActiveModel` of a protected dense entity, reached through
//! `Table`: its `insert` (what SeaORM's nested writes call) does not compile.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr, EntityTrait};

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    let am = <account::Table as EntityTrait>::ActiveModel::default();
    let _ = am.insert(db).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
