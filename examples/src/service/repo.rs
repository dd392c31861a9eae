//! The repository: every method that writes is `#[hierlocked]`, so it takes
//! its locks on the caller's transaction before its body runs, and only
//! its proof (`lock`) can write the protected rows.

use hierlock::sea_orm::{ColumnTrait, DatabaseTransaction, QueryFilter, QueryOrder, Set};
use hierlock::{HasLocker, Locked, Locker, hierlocked, proof::ResourceLevel};

use super::entity::resource;
use super::error::ServiceError;

/// The accounts' resources, locked through `locker`.
#[derive(Clone, Debug)]
pub struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Repo {
    /// A repository locking through `locker`.
    pub fn new(locker: Locker) -> Self {
        Repo { locker }
    }

    /// Replace an account's resources with `resources` (`(id, balance)`),
    /// under a write lock on the account: nothing below it moves meanwhile.
    ///
    /// # Errors
    /// Locking or writing failed (an ID already used by another account
    /// violates the primary key).
    #[hierlocked(user = user_id, account = account_id)]
    pub async fn open_account(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        resources: &[(i64, i64)],
    ) -> Result<(), ServiceError> {
        resource::Entity::delete_many()
            .filter(resource::Column::UserId.eq(user_id))
            .filter(resource::Column::AccountId.eq(account_id))
            .exec(&lock)
            .await?;
        for &(id, balance) in resources {
            let row = resource::ActiveModel {
                id: Set(id),
                user_id: Set(user_id),
                account_id: Set(account_id),
                balance: Set(balance),
            };
            resource::Entity::insert(row).exec(&lock).await?;
        }
        Ok(())
    }

    /// Add `amount` to one resource: read, add in Rust, write back, the
    /// read-modify-write that loses updates without the lock.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], or locking or writing failed.
    #[hierlocked(user = user_id, account = account_id, resource = id)]
    pub async fn deposit(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        id: i64,
        amount: i64,
    ) -> Result<i64, ServiceError> {
        add(&lock, user_id, account_id, id, amount).await
    }

    /// Move `amount` between two resources of one account: both locked in
    /// one acquisition, in the global order, so opposite transfers wait for
    /// each other instead of deadlocking.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::InsufficientFunds`], or
    /// locking or writing failed.
    #[hierlocked(user = user_id, account = account_id, resources = [from, to])]
    pub async fn transfer(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
        from: i64,
        to: i64,
        amount: i64,
    ) -> Result<(), ServiceError> {
        add(&lock, user_id, account_id, from, -amount).await?;
        add(&lock, user_id, account_id, to, amount).await?;
        Ok(())
    }

    /// An account's resources, `(id, balance)` by ID, under a read lock on
    /// the account. (A read lock on an account does not stop writers of
    /// its resources; lock it for writing to freeze them.)
    ///
    /// # Errors
    /// Locking or reading failed.
    #[hierlocked(user = user_id, account = account_id, read)]
    pub async fn balances(
        &self,
        txn: &DatabaseTransaction,
        user_id: i64,
        account_id: i64,
    ) -> Result<Vec<(i64, i64)>, ServiceError> {
        let rows = resource::Entity::find()
            .filter(resource::Column::UserId.eq(user_id))
            .filter(resource::Column::AccountId.eq(account_id))
            .order_by_asc(resource::Column::Id)
            .all(txn)
            .await?;
        Ok(rows.into_iter().map(|r| (r.id, r.balance)).collect())
    }
}

/// Add `delta` to resource `id` of the account, refusing to go below zero;
/// the new balance. `lock` must cover the resource.
async fn add(
    lock: &Locked<'_, ResourceLevel>,
    user: i64,
    account: i64,
    id: i64,
    delta: i64,
) -> Result<i64, ServiceError> {
    let row = resource::Entity::find_by_id(id)
        .one(lock.txn())
        .await?
        .filter(|row| row.user_id == user && row.account_id == account)
        .ok_or(ServiceError::NotFound { user, account, id })?;
    let balance = row.balance + delta;
    if balance < 0 {
        return Err(ServiceError::InsufficientFunds {
            id,
            balance: row.balance,
            amount: -delta,
        });
    }
    let mut row: resource::ActiveModel = row.into();
    row.balance = Set(balance);
    resource::Entity::update(row).exec(lock).await?;
    Ok(balance)
}
