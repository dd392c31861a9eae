//! The raw SeaORM `ActiveModel` of a protected dense entity, reached through
//! `Table`: its `insert` (what SeaORM's nested writes call) does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, EntityTrait};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let am = <account::Table as EntityTrait>::ActiveModel::default();
    let _ = am.insert(txn).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
