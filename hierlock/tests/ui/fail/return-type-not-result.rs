use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{Locker, hierlocked};

#[hierlocked(user = user, locker = locker)]
async fn touch(locker: &Locker, txn: &DatabaseTransaction, user: i64) -> Option<()> {
    Some(())
}

fn main() {}
