use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{Locker, hierlocked};

#[hierlocked(user = user, account = account, read, read_subtree, locker = locker)]
async fn total(locker: &Locker, txn: &DatabaseTransaction, user: i64, account: i64) -> hierlock::Result<()> {
    Ok(())
}

fn main() {}
