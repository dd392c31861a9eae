use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{Locker, hierlocked};

#[hierlocked(user = user, txn = tx, locker = locker)]
async fn touch(locker: &Locker, txn: &DatabaseTransaction, user: i64) -> hierlock::Result<()> {
    Ok(())
}

fn main() {}
