//! `account::ActiveModelEx`, as SeaORM's dense format names it: not available
//! on a protected entity; the error says how to write instead.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr};

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    let _ = account::ActiveModelEx::new().save(db).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
