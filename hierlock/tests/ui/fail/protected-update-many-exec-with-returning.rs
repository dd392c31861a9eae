//! SeaORM's `update_many().exec_with_returning(db)`, ported to a protected
//! entity: the protected filtered writes return how many rows they wrote;
//! the refusal says how to read the rows back.

#[path = "../support/entities.rs"]
mod entities;

use entities::{Repo, account};
use hierlock::hierlocked;
use hierlock::sea_orm::{ColumnTrait, DatabaseTransaction, sea_query::Expr};

impl Repo {
    #[hierlocked(user = user, account = account)]
    async fn reset(&self, txn: &DatabaseTransaction, user: i64, account: i64) -> hierlock::Result<()> {
        let _rows = account::Entity::update_many()
            .col_expr(account::Column::Balance, Expr::value(0))
            .filter(account::Column::Id.eq(account))
            .exec_with_returning(&lock);
        Ok(())
    }
}

fn main() {}
