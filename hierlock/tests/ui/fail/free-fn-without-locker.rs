use hierlock::hierlocked;
use hierlock::sea_orm::DatabaseTransaction;

#[hierlocked(user = user)]
async fn rename(txn: &DatabaseTransaction, user: i64) -> hierlock::Result<()> {
    Ok(())
}

fn main() {}
