//! `Entity::delete_by_<unique key>` of a protected dense entity is a protected
//! delete: with a transaction rather than a lock proof it does not compile.

#[path = "../support/dense.rs"]
mod dense;

use dense::{account, user};
use hierlock::sea_orm::{DatabaseTransaction, DbErr};

async fn write(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    user::Entity::delete_by_email("alice@example.com")
        .exec(txn)
        .await?;
    account::Table::delete_by_owner_name((1, "main".to_owned()))
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = write;
}
