#[path = "../support/entities.rs"]
mod entities;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

use entities::account;
use hierlock::sea_orm::{ActiveModelTrait, ActiveValue::Set, DatabaseTransaction, DbErr};

async fn open(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    let row = account::ActiveModel {
        id: Set(1),
        user_id: Set(1),
        balance: Set(0),
    };
    row.insert(txn).await?;
    Ok(())
}

/// Reached from `main`, so that `cargo build` instantiates the insert.
fn run(txn: &DatabaseTransaction) {
    let _ = pin!(open(txn)).poll(&mut Context::from_waker(Waker::noop()));
}

fn main() {
    let run: fn(&DatabaseTransaction) = run;
    let _ = run;
}
