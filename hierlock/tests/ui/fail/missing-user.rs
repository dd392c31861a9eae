use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{Locker, hierlocked};

#[hierlocked(account = account, locker = locker)]
async fn touch(locker: &Locker, txn: &DatabaseTransaction, account: i64) -> hierlock::Result<()> {
    Ok(())
}

fn main() {}
