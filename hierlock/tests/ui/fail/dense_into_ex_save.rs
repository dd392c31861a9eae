//! `ActiveModel::into_ex()` of a protected dense entity, then a nested
//! write: refused.

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let am = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        name: Set("main".to_owned()),
    };
    let _ = am.into_ex().save(txn).await?;
    Ok(())
}

fn main() {
    let _ = write;
}
