//! `#[hierlocked]` in trait impls (native `async fn` in traits) and in a
//! trait's default method.
#![deny(warnings)]
#![allow(dead_code)]

use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{HasLocker, Locker, hierlocked};

trait Accounts: HasLocker {
    async fn deposit(&self, txn: &DatabaseTransaction, account: i64) -> hierlock::Result<i64>;

    #[hierlocked(user = user)]
    async fn close(&self, txn: &DatabaseTransaction, user: i64) -> hierlock::Result<()> {
        let _ = lock.requests();
        Ok(())
    }
}

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Accounts for Repo {
    #[hierlocked(user = 1, account = account)]
    async fn deposit(&self, txn: &DatabaseTransaction, account: i64) -> hierlock::Result<i64> {
        Ok(lock.requests().len() as i64)
    }
}

/// A trait whose futures must be `Send`, implemented with `async fn`.
trait SendAccounts {
    fn touch(
        &self,
        txn: &DatabaseTransaction,
    ) -> impl std::future::Future<Output = hierlock::Result<()>> + Send;
}

impl SendAccounts for Repo {
    #[hierlocked(user = "u", account = "a", resource = "r")]
    async fn touch(&self, txn: &DatabaseTransaction) -> hierlock::Result<()> {
        Ok(())
    }
}

fn main() {}
