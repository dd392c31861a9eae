#[path = "../support/entities.rs"]
mod entities;

use entities::account;
use hierlock::sea_orm::sea_query::Expr;
use hierlock::sea_orm::{DatabaseTransaction, DbErr, Update};

async fn reset(txn: &DatabaseTransaction) -> Result<(), DbErr> {
    Update::many(account::Entity)
        .col_expr(account::Column::Balance, Expr::value(0))
        .exec(txn)
        .await?;
    Ok(())
}

fn main() {
    let _ = reset;
}
