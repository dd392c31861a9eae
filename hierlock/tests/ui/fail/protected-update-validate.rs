//! SeaORM's `update(am).validate()?`, ported to a protected entity: the
//! protected update checks its key when it runs; the refusal says so.

#[path = "../support/entities.rs"]
mod entities;

use entities::{Repo, account};
use hierlock::hierlocked;
use hierlock::sea_orm::{ActiveValue::Set, DatabaseTransaction};

impl Repo {
    #[hierlocked(user = user, account = account)]
    async fn credit(&self, txn: &DatabaseTransaction, user: i64, account: i64) -> hierlock::Result<()> {
        let row = account::ActiveModel {
            id: Set(account),
            balance: Set(100),
            ..Default::default()
        };
        let _ = account::Entity::update(row).validate();
        Ok(())
    }
}

fn main() {}
