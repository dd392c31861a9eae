//! A nested save given the proof's transaction instead of the proof: the
//! transaction alone proves nothing, so this does not compile (pass `lock`).

#[path = "../support/dense.rs"]
mod dense;

use dense::account;
use hierlock::proof::UserLevel;
use hierlock::sea_orm::ActiveValue::Set;
use hierlock::{Locked, sea_orm::DbErr};

async fn write(lock: &Locked<'_, UserLevel>) -> Result<(), DbErr> {
    account::NestedActiveModel::from(account::ActiveModel {
        id: Set(10),
        user_id: Set(1),
        name: Set("main".to_owned()),
    })
    .save(lock.txn())
    .await?;
    Ok(())
}

fn main() {
    let _ = write;
}
