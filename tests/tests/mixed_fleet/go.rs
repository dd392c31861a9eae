//! The seed's Go package, statement for statement (seeds/000, §4–§5).
//!
//! - Buckets: FNV-1a 32 over `user:u`, `account:u:a`, `resource:u:a:r`,
//!   modulo the bucket space, computed here independently of hierlock.
//! - Each lock is its own statement, `SELECT bucket FROM hier_lock_buckets
//!   WHERE level = ? AND bucket = ? FOR SHARE | FOR UPDATE`, and a missing
//!   row is an error (`sql.ErrNoRows`).
//! - `Acquire(level, u, a, r)`: ancestors `FOR SHARE`, the target `FOR
//!   UPDATE`, ancestors first.
//! - `AcquireResources(u, a, rs)`: `User` and `Account` `FOR SHARE`, then
//!   `sort.Strings(rs)` and each resource `FOR UPDATE`, in that order.
//! - A lock-only transaction at READ COMMITTED; `Release` is a rollback.
//!
//! The table is the fixture's (the Go package hard-codes
//! `hier_lock_buckets` and 10,000,000 buckets; the suite provisions smaller
//! tables, and the hashing is the same modulo any space).

use hierlock_tests::Fixture;
use sea_orm::{
    AccessMode, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    IsolationLevel, Statement, TransactionTrait,
};

/// A target of the Go package's `Acquire`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoTarget {
    /// `Acquire(LevelUser, u, "", "")`.
    User(String),
    /// `Acquire(LevelAccount, u, a, "")`.
    Account(String, String),
    /// `Acquire(LevelResource, u, a, r)`.
    Resource(String, String, String),
}

/// `GoTarget::User(u)` from anything printable.
pub fn user(u: impl ToString) -> GoTarget {
    GoTarget::User(u.to_string())
}

/// `GoTarget::Account(u, a)`.
pub fn account(u: impl ToString, a: impl ToString) -> GoTarget {
    GoTarget::Account(u.to_string(), a.to_string())
}

/// `GoTarget::Resource(u, a, r)`.
pub fn resource(u: impl ToString, a: impl ToString, r: impl ToString) -> GoTarget {
    GoTarget::Resource(u.to_string(), a.to_string(), r.to_string())
}

/// One statement the Go package sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoLock {
    /// `0` user, `1` account, `2` resource.
    pub level: i64,
    /// The bucket row.
    pub bucket: i64,
    /// `FOR UPDATE` (else `FOR SHARE`).
    pub exclusive: bool,
}

/// The Go package pointed at one fixture's table.
#[derive(Clone, Debug)]
pub struct GoPackage {
    table: String,
    space: u32,
}

impl GoPackage {
    /// The Go package sharing `fx`'s bucket table.
    pub fn sharing(fx: &Fixture) -> GoPackage {
        GoPackage {
            table: fx.config.table().as_str().to_owned(),
            space: fx.config.bucket_space(),
        }
    }

    /// The bucket of the key string `key` (`hashKey` in the Go package).
    pub fn bucket(&self, key: &str) -> i64 {
        let hash = key.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
        });
        i64::from(hash % self.space)
    }

    fn user_lock(&self, u: &str, exclusive: bool) -> GoLock {
        GoLock {
            level: 0,
            bucket: self.bucket(&format!("user:{u}")),
            exclusive,
        }
    }

    fn account_lock(&self, u: &str, a: &str, exclusive: bool) -> GoLock {
        GoLock {
            level: 1,
            bucket: self.bucket(&format!("account:{u}:{a}")),
            exclusive,
        }
    }

    fn resource_lock(&self, u: &str, a: &str, r: &str) -> GoLock {
        GoLock {
            level: 2,
            bucket: self.bucket(&format!("resource:{u}:{a}:{r}")),
            exclusive: true,
        }
    }

    /// The statements of `Acquire(target)`, in the order they are sent.
    pub fn acquire_plan(&self, target: &GoTarget) -> Vec<GoLock> {
        match target {
            GoTarget::User(u) => vec![self.user_lock(u, true)],
            GoTarget::Account(u, a) => {
                vec![self.user_lock(u, false), self.account_lock(u, a, true)]
            }
            GoTarget::Resource(u, a, r) => vec![
                self.user_lock(u, false),
                self.account_lock(u, a, false),
                self.resource_lock(u, a, r),
            ],
        }
    }

    /// The statements of `AcquireResources(u, a, rs)`, in the order they are sent.
    pub fn acquire_resources_plan(&self, u: &str, a: &str, rs: &[&str]) -> Vec<GoLock> {
        let mut sorted = rs.to_vec();
        sorted.sort_unstable(); // sort.Strings: byte order, as Rust's str order
        let mut plan = vec![self.user_lock(u, false), self.account_lock(u, a, false)];
        plan.extend(sorted.iter().map(|r| self.resource_lock(u, a, r)));
        plan
    }

    /// The lock-only transaction the Go package opens (`BeginTx` at READ COMMITTED).
    pub async fn begin(db: &DatabaseConnection) -> DatabaseTransaction {
        db.begin_with_config(
            Some(IsolationLevel::ReadCommitted),
            Some(AccessMode::ReadWrite),
        )
        .await
        .expect("begin a READ COMMITTED transaction")
    }

    /// Send `lock` on `txn`: one statement, one row.
    pub async fn lock(&self, txn: &DatabaseTransaction, lock: GoLock) -> Result<(), DbErr> {
        let clause = if lock.exclusive {
            "FOR UPDATE"
        } else {
            "FOR SHARE"
        };
        let sql = format!(
            "SELECT bucket FROM {} WHERE level = ? AND bucket = ? {clause}",
            self.table
        );
        let stmt = Statement::from_sql_and_values(
            DbBackend::MySql,
            sql,
            [lock.level.into(), lock.bucket.into()],
        );
        match txn.query_one_raw(stmt).await? {
            Some(_) => Ok(()),
            None => Err(DbErr::RecordNotFound(format!(
                "sql: no rows in result set (level {}, bucket {})",
                lock.level, lock.bucket
            ))),
        }
    }

    /// Send every statement of `plan` on `txn`, in order, stopping at the
    /// first failure (the Go package then rolls back).
    pub async fn lock_all(&self, txn: &DatabaseTransaction, plan: &[GoLock]) -> Result<(), DbErr> {
        for lock in plan {
            self.lock(txn, *lock).await?;
        }
        Ok(())
    }
}

/// The MySQL-family error number of `err`, if the server sent one.
pub fn error_number(err: &DbErr) -> Option<u16> {
    use sea_orm::sqlx::mysql::MySqlDatabaseError;
    let (DbErr::Query(sea_orm::RuntimeErr::SqlxError(e))
    | DbErr::Exec(sea_orm::RuntimeErr::SqlxError(e))) = err
    else {
        return None;
    };
    let sea_orm::sqlx::Error::Database(db) = &**e else {
        return None;
    };
    db.try_downcast_ref::<MySqlDatabaseError>()
        .map(MySqlDatabaseError::number)
}
