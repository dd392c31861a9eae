#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::DatabaseTransaction;

// An edit spanning requests, written without a lock proof: only a
// versioned entity may be, and `account` declares no `version = ..`.
async fn rename(txn: &DatabaseTransaction, edited: account::Model) -> hierlock::Result<()> {
    account::Entity::update(edited).exec_versioned(txn).await?;
    account::Entity::delete(account::ActiveModel::new()).exec_versioned(txn).await?;
    Ok(())
}

fn main() {
    let _ = rename;
}
