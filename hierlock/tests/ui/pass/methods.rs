//! `#[hierlocked]` on methods of every shape: receivers, generics, lifetimes,
//! where clauses, inner attributes, each argument.
#![deny(warnings)]
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use hierlock::proof::{AccountLevel, Read, ReadSubtree, ResourceLevel, UserLevel, Write};
use hierlock::sea_orm::{DatabaseTransaction, DbErr};
use hierlock::{HasLocker, Locked, Locker, hierlocked};

#[derive(Debug)]
enum AppError {
    Lock(hierlock::Error),
    Db(DbErr),
}

impl From<hierlock::Error> for AppError {
    fn from(e: hierlock::Error) -> Self {
        AppError::Lock(e)
    }
}

impl From<DbErr> for AppError {
    fn from(e: DbErr) -> Self {
        AppError::Db(e)
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

/// The proof's type follows from the arguments.
fn is_user(_: &Locked<'_, UserLevel, Write>) {}
fn is_account(_: &Locked<'_, AccountLevel, Write>) {}
fn is_resource(_: &Locked<'_, ResourceLevel, Write>) {}
fn is_account_read(_: &Locked<'_, AccountLevel, Read>) {}
fn is_user_subtree_read(_: &Locked<'_, UserLevel, ReadSubtree>) {}
fn is_resource_subtree_read(_: &Locked<'_, ResourceLevel, ReadSubtree>) {}

impl Repo {
    /// A user lock; the ID is a `String` parameter, borrowed, not moved.
    #[hierlocked(user = user)]
    pub async fn user(&self, txn: &DatabaseTransaction, user: String) -> Result<String, AppError> {
        is_user(&lock);
        Ok(user)
    }

    /// An account lock; IDs of two types; `hierlock::Error` as the error.
    #[hierlocked(user = user, account = account)]
    async fn account(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        account: &str,
    ) -> hierlock::Result<()> {
        is_account(&lock);
        Ok(())
    }

    /// A resource lock, IDs from fields and expressions.
    #[hierlocked(user = self.locker.config().bucket_space(), account = ids.0, resource = ids.1 + 1)]
    async fn resource(&self, txn: &DatabaseTransaction, ids: (u32, u64)) -> Result<(), AppError> {
        is_resource(&lock);
        Ok(())
    }

    /// Several resources, a read lock, `nowait`, a renamed proof.
    #[hierlocked(user = 1, account = 2, resources = &ids, nowait, proof = guard)]
    async fn many(&self, txn: &DatabaseTransaction, ids: Vec<i32>) -> Result<usize, AppError> {
        is_resource(&guard);
        Ok(ids.len())
    }

    #[hierlocked(user = "u", account = "a", read, timeout = Duration::from_millis(250))]
    async fn read(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        is_account_read(&lock);
        Ok(())
    }

    /// Flags also take `= true` / `= false`.
    #[hierlocked(user = "u", account = "a", read = false, nowait = false)]
    async fn flags(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        is_account(&lock);
        Ok(())
    }

    /// A subtree read, of a user and of resources (there: a plain read).
    #[hierlocked(user = "u", read_subtree)]
    async fn read_subtree(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        is_user_subtree_read(&lock);
        Ok(())
    }

    #[hierlocked(user = "u", account = "a", resources = ["r1", "r2"], read = false, read_subtree = true)]
    async fn read_subtree_of_resources(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        is_resource_subtree_read(&lock);
        Ok(())
    }

    #[hierlocked(user = "u", account = "a", read_subtree = false)]
    async fn no_subtree_read(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        is_account(&lock);
        Ok(())
    }

    /// `&mut self`, the transaction by value, and a body that moves it after
    /// its last use of the proof.
    #[hierlocked(user = 7)]
    async fn by_value(&mut self, txn: DatabaseTransaction) -> Result<(), AppError> {
        is_user(&lock);
        txn.commit().await?;
        Ok(())
    }

    /// `self: Arc<Self>`; a transaction named by `txn`; another of the same type.
    #[hierlocked(user = 1, txn = second)]
    async fn named(
        self: Arc<Self>,
        first: &DatabaseTransaction,
        second: &DatabaseTransaction,
    ) -> Result<(), AppError> {
        assert!(std::ptr::eq(lock.txn(), second));
        let _ = first;
        Ok(())
    }

    /// A call taken within another's proof (or `None`: on its own).
    #[hierlocked(user = 1, account = 2, resource = 3, within = outer)]
    async fn inner(
        &self,
        txn: &DatabaseTransaction,
        outer: Option<&Locked<'_, AccountLevel>>,
    ) -> Result<(), AppError> {
        Ok(())
    }

    #[hierlocked(user = 1, account = 2)]
    async fn outer(&self, txn: &DatabaseTransaction) -> Result<(), AppError> {
        self.inner(txn, Some(&lock)).await?;
        self.within_ref(txn, &lock).await
    }

    #[hierlocked(user = 1, account = 2, resource = 4, within = outer)]
    async fn within_ref(
        &self,
        txn: &DatabaseTransaction,
        outer: &Locked<'_, AccountLevel>,
    ) -> Result<(), AppError> {
        Ok(())
    }

    /// Inner attributes stay at the top of the body; `?`, early `return`.
    #[hierlocked(user = 1)]
    async fn inner_attributes(
        &self,
        txn: &DatabaseTransaction,
        fail: bool,
    ) -> Result<u8, AppError> {
        #![allow(unused_mut)]
        let mut n = 1;
        if fail {
            return Err(AppError::Db(DbErr::Custom("no".into())));
        }
        Ok(n)
    }

    /// No `self`: the locker is named.
    #[hierlocked(user = 1, locker = locker)]
    async fn associated(locker: &Locker, txn: &DatabaseTransaction) -> Result<(), AppError> {
        Ok(())
    }
}

/// Generic repositories, lifetimes and where clauses.
struct Generic<'a, T> {
    locker: &'a Locker,
    item: T,
}

impl<T> HasLocker for Generic<'_, T> {
    fn locker(&self) -> &Locker {
        self.locker
    }
}

impl<'a, T: Clone + Send + Sync> Generic<'a, T> {
    #[hierlocked(user = id)]
    async fn generic<'t, I>(&self, txn: &'t DatabaseTransaction, id: I) -> Result<T, AppError>
    where
        I: hierlock::LockId + Send + Sync,
    {
        Ok(self.item.clone())
    }
}

/// A free function with the locker as an argument.
#[hierlocked(user = user, account = 1, locker = &*locker)]
pub async fn free(
    locker: Arc<Locker>,
    txn: &hierlock::sea_orm::DatabaseTransaction,
    user: u64,
) -> Result<(), AppError> {
    is_account(&lock);
    Ok(())
}

/// The futures are `Send`: annotated methods can run on a multi-threaded runtime.
fn assert_send<F: std::future::Future + Send>(_: F) {}

fn sends(repo: &Repo, txn: &DatabaseTransaction) {
    assert_send(repo.user(txn, String::new()));
    assert_send(repo.many(txn, vec![1, 2]));
    assert_send(repo.outer(txn));
}

fn main() {}
