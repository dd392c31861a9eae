use std::time::Duration;

use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{Locker, hierlocked};

#[hierlocked(user = user, nowait, timeout = Duration::from_secs(1), locker = locker)]
async fn touch(locker: &Locker, txn: &DatabaseTransaction, user: i64) -> hierlock::Result<()> {
    Ok(())
}

fn main() {}
