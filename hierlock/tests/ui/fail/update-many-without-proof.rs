#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{ColumnTrait, DatabaseTransaction};

async fn reset(txn: &DatabaseTransaction) -> hierlock::Result<()> {
    account::Entity::update_many()
        .col_expr(account::Column::Balance, Expr::value(0))
        .filter(account::Column::UserId.eq(1))
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = reset;
}
