//! `Model::into_ex()`, then `ModelEx::delete`: does not compile.
//! (With a connection. On a SeaORM transaction it compiles and is refused
//! when it runs, before it writes: the conformance suite's dense tests.)

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr};

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(db).await? {
        row.into_ex().delete(db).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
