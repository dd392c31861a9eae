//! SeaORM's `insert_many(..).on_empty_do_nothing()`, ported to a protected
//! entity: its empty insert already sends nothing; the refusal says so.

#[path = "../support/entities.rs"]
mod entities;

use entities::{Repo, account};
use hierlock::hierlocked;
use hierlock::sea_orm::DatabaseTransaction;

impl Repo {
    #[hierlocked(user = user)]
    async fn open(&self, txn: &DatabaseTransaction, user: i64, rows: Vec<account::ActiveModel>) -> hierlock::Result<()> {
        let _ = account::Entity::insert_many(rows).on_empty_do_nothing();
        Ok(())
    }
}

fn main() {}
