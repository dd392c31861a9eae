//! A protected dense `Model`'s `into_active_model()` is SeaORM's raw active
//! model (SeaORM's nested writes convert the rows they unlink with it). Its
//! `update_without_returning`, which no nested write calls, does not
//! compile, with a connection or a transaction.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseConnection, DbErr};

async fn write(db: &DatabaseConnection) -> Result<(), DbErr> {
    if let Some(row) = account::Entity::find_by_id(1).one(db).await? {
        let am = row.into_active_model();
        am.update_without_returning(db).await?;
    }
    Ok(())
}

fn main() {
    let _ = write;
}
