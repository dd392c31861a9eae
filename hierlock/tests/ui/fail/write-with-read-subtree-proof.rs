#[path = "../support/entities.rs"]
mod entities;

use entities::{Repo, account};
use hierlock::hierlocked;
use hierlock::sea_orm::DatabaseTransaction;

impl Repo {
    #[hierlocked(user = user, read_subtree)]
    async fn close(&self, txn: &DatabaseTransaction, user: i64, account: i64) -> hierlock::Result<()> {
        account::Entity::delete_by_id(account).exec(&lock).await?;
        Ok(())
    }
}

fn main() {}
