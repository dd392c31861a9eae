//! `#[hierlocked]` on the methods of `#[async_trait]` traits and impls
//! (dyn-compatible repositories): every receiver, `self` in the arguments,
//! parameters async-trait rebinds (by value, patterns), a returned proof,
//! default methods.
#![deny(warnings)]
#![allow(dead_code)]

use std::sync::Arc;

use async_trait::async_trait;
use hierlock::proof::{AccountLevel, UserLevel};
use hierlock::sea_orm::DatabaseTransaction;
use hierlock::{HasLocker, Locked, Locker, hierlocked};

struct Repo {
    locker: Locker,
    user: i64,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

#[async_trait]
trait Accounts: HasLocker + Send + Sync {
    async fn shared(&self, txn: &DatabaseTransaction, account: i64) -> hierlock::Result<usize>;
    async fn exclusive(&mut self, txn: &DatabaseTransaction) -> hierlock::Result<()>;
    async fn owned(self: Arc<Self>, txn: &DatabaseTransaction) -> hierlock::Result<()>;
    async fn by_value(&self, txn: DatabaseTransaction, ids: (i64, i64)) -> hierlock::Result<()>;
    async fn proof<'t>(
        &self,
        txn: &'t DatabaseTransaction,
        user: i64,
    ) -> hierlock::Result<Locked<'t, UserLevel>>;

    #[hierlocked(user = user, account = account, nowait)]
    async fn provided(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        account: i64,
    ) -> hierlock::Result<()> {
        let _: &Locked<'_, AccountLevel> = &lock;
        Ok(())
    }
}

#[async_trait]
impl Accounts for Repo {
    #[hierlocked(user = self.user, account = account, read)]
    async fn shared(&self, txn: &DatabaseTransaction, account: i64) -> hierlock::Result<usize> {
        Ok(lock.requests().len() + self.user as usize)
    }

    #[hierlocked(user = self.user, locker = &self.locker)]
    async fn exclusive(&mut self, txn: &DatabaseTransaction) -> hierlock::Result<()> {
        self.user += 1;
        Ok(())
    }

    #[hierlocked(user = self.user, account = 1, resources = [1, 2, 3])]
    async fn owned(self: Arc<Self>, txn: &DatabaseTransaction) -> hierlock::Result<()> {
        drop(self);
        Ok(())
    }

    #[hierlocked(user = self.user, account = ids.0, resource = ids.1)]
    async fn by_value(&self, txn: DatabaseTransaction, ids: (i64, i64)) -> hierlock::Result<()> {
        let _ = lock.txn();
        Ok(())
    }

    #[hierlocked(user = user)]
    async fn proof<'t>(
        &self,
        txn: &'t DatabaseTransaction,
        user: i64,
    ) -> hierlock::Result<Locked<'t, UserLevel>> {
        Ok(lock)
    }
}

/// A free-standing trait object: the trait is dyn-compatible.
fn as_dyn(repo: Arc<Repo>) -> Arc<dyn Accounts> {
    repo
}

fn main() {}
