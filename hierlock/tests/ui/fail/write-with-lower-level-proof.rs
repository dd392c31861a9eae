#[path = "../support/entities.rs"]
mod entities;

use entities::{Repo, account};
use hierlock::hierlocked;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction};

impl Repo {
    #[hierlocked(user = user, account = account, resource = resource)]
    async fn open(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        account: i64,
        resource: i64,
    ) -> hierlock::Result<()> {
        let row = account::ActiveModel {
            id: Set(account),
            user_id: Set(user),
            balance: Set(0),
        };
        account::Entity::insert(row).exec(&lock).await?;
        Ok(())
    }
}

fn main() {}
