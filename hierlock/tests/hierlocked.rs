//! `#[hierlocked]` repository methods and `#[protected]` entities on MariaDB
//! (`HIERLOCK_MARIADB_URL`, default `mysql://root@127.0.0.1:3306/test`).
//! An unreachable server fails the tests; it never skips them.
//!
//! The bucket table is `hl_macro_tests` (10,000 buckets per level),
//! provisioned by `hierlock-migration`; the entity tables are `hlm_*`. Tests
//! run one at a time (they share the bucket table, and a stray bucket
//! collision between two tests would turn "not blocked" into "blocked"); each
//! uses IDs of its own, deleted first. "Blocked" is decided from
//! `information_schema.INNODB_TRX`, and every wait has a timeout.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hierlock::proof::{AccountLevel, ResourceLevel};
use hierlock::sea_orm::{
    ActiveValue::Set, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbErr,
    QueryResult, Schema, Statement, TransactionTrait,
};
use hierlock::{Config, ErrorKind, HasLocker, Locked, Locker, Target, TxnState, hierlocked};
use hierlock_migration::Provision;

const TABLE: &str = "hl_macro_tests";
const BUCKETS: u32 = 10_000;
/// Longest wait for anything that should happen.
const PATIENCE: Duration = Duration::from_secs(20);

mod entities {
    #[hierlock::protected(level = user, user = id)]
    pub mod user {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hlm_users")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: String,
            pub name: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {}
    }

    #[hierlock::protected(level = account, user = user_id, account = id)]
    pub mod account {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hlm_accounts")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: String,
            pub user_id: String,
            pub name: String,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {}
    }

    #[hierlock::protected(level = resource, user = user_id, account = account_id, resource = id)]
    pub mod resource {
        use hierlock::sea_orm::entity::prelude::*;

        #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
        #[sea_orm(table_name = "hlm_resources")]
        pub struct Model {
            #[sea_orm(primary_key, auto_increment = false)]
            pub id: String,
            pub user_id: String,
            pub account_id: String,
            pub balance: i64,
        }

        #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
        pub enum Relation {}
    }
}

use entities::{account, resource, user};

#[derive(Debug, thiserror::Error)]
enum AppError {
    #[error(transparent)]
    Lock(#[from] hierlock::Error),
    #[error(transparent)]
    Db(#[from] DbErr),
    #[error("{0} not found")]
    Missing(String),
    #[error("insufficient balance in {0}")]
    Insufficient(String),
}

impl AppError {
    /// The hierlock error kind, if this is one.
    fn lock_kind(&self) -> Option<ErrorKind> {
        match self {
            AppError::Lock(e) => Some(e.kind()),
            _ => None,
        }
    }
}

impl hierlock::Retryable for AppError {
    fn is_retryable(&self) -> bool {
        match self {
            AppError::Lock(e) => e.is_retryable(),
            AppError::Db(e) => hierlock::Retryable::is_retryable(e),
            _ => false,
        }
    }
}

/// The repository under test.
struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

impl Repo {
    /// A user with one account and `resources` resources of balance 100.
    #[hierlocked(user = u)]
    async fn create_tree(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        resources: &[&str],
    ) -> Result<(), AppError> {
        user::Entity::insert(user::ActiveModel {
            id: Set(u.to_owned()),
            name: Set(format!("user {u}")),
        })
        .exec(&lock)
        .await?;
        account::Entity::insert(account::ActiveModel {
            id: Set(a.to_owned()),
            user_id: Set(u.to_owned()),
            name: Set(format!("account {a}")),
        })
        .exec(&lock)
        .await?;
        let rows = resources.iter().map(|r| resource::ActiveModel {
            id: Set((*r).to_owned()),
            user_id: Set(u.to_owned()),
            account_id: Set(a.to_owned()),
            balance: Set(100),
        });
        resource::Entity::insert_many(rows).exec(&lock).await?;
        Ok(())
    }

    /// A second account for an existing user: the user's lock covers it.
    #[hierlocked(user = u)]
    async fn add_account(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
    ) -> Result<(), AppError> {
        account::Entity::insert(account::ActiveModel {
            id: Set(a.to_owned()),
            user_id: Set(u.to_owned()),
            name: Set(format!("account {a}")),
        })
        .exec(&lock)
        .await?;
        Ok(())
    }

    /// Pass this call's proof (on `txn`) to a call on `other`: refused.
    #[hierlocked(user = u, account = a, txn = txn)]
    async fn cross(
        &self,
        txn: &DatabaseTransaction,
        other: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
    ) -> Result<i64, AppError> {
        self.deposit_within(other, Some(&lock), u, a, r, 1).await
    }

    /// Write the user row: an exclusive lock on the user.
    #[hierlocked(user = u)]
    async fn rename_user(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        name: &str,
    ) -> Result<(), AppError> {
        let row = user::ActiveModel {
            id: Set(u.to_owned()),
            name: Set(name.to_owned()),
        };
        user::Entity::update(row).exec(&lock).await?;
        Ok(())
    }

    /// Write the account row: an exclusive lock on the account.
    #[hierlocked(user = u, account = a)]
    async fn rename_account(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        name: &str,
    ) -> Result<(), AppError> {
        rename_account_with(&lock, a, name).await
    }

    /// Read the account under a shared lock.
    #[hierlocked(user = u, account = a, read)]
    async fn account_total(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
    ) -> Result<i64, AppError> {
        let rows = resource::Entity::find().all(txn).await?;
        Ok(rows
            .iter()
            .filter(|r| r.account_id == a)
            .map(|r| r.balance)
            .sum())
    }

    /// Add to one resource: an exclusive lock on the resource.
    #[hierlocked(user = u, account = a, resource = r)]
    async fn deposit(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
        amount: i64,
    ) -> Result<i64, AppError> {
        add(&lock, r, amount).await
    }

    /// Move between resources of one account, both locked in one acquisition.
    #[hierlocked(user = u, account = a, resources = [from, to])]
    async fn transfer(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        from: &str,
        to: &str,
        amount: i64,
    ) -> Result<(), AppError> {
        add(&lock, to, amount).await?;
        add(&lock, from, -amount).await?;
        Ok(())
    }

    /// [`Repo::deposit`], failing at once on a conflict.
    #[hierlocked(user = u, account = a, resource = r, nowait)]
    async fn deposit_nowait(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
        amount: i64,
    ) -> Result<i64, AppError> {
        add(&lock, r, amount).await
    }

    /// [`Repo::deposit`], waiting at most one second.
    #[hierlocked(user = u, account = a, resource = r, timeout = Duration::from_secs(1))]
    async fn deposit_patiently(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
        amount: i64,
    ) -> Result<i64, AppError> {
        add(&lock, r, amount).await
    }

    /// Rename an account, then deposit into `r` within the same proof.
    #[hierlocked(user = u, account = a)]
    async fn rename_and_deposit(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
    ) -> Result<i64, AppError> {
        rename_account_with(&lock, a, "renamed").await?;
        self.deposit_within(txn, Some(&lock), u, a, r, 1).await
    }

    /// A resource write taken within an account proof (or on its own).
    #[allow(clippy::too_many_arguments)]
    #[hierlocked(user = u, account = a, resource = r, within = outer)]
    async fn deposit_within(
        &self,
        txn: &DatabaseTransaction,
        outer: Option<&Locked<'_, AccountLevel>>,
        u: &str,
        a: &str,
        r: &str,
        amount: i64,
    ) -> Result<i64, AppError> {
        add(&lock, r, amount).await
    }

    /// Lock account `first`, then account `second` of the same user within it.
    #[hierlocked(user = u, account = first)]
    async fn two_accounts(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        first: &str,
        second: &str,
    ) -> Result<(), AppError> {
        self.rename_account_within(txn, &lock, u, second).await
    }

    #[hierlocked(user = u, account = a, within = outer)]
    async fn rename_account_within(
        &self,
        txn: &DatabaseTransaction,
        outer: &Locked<'_, AccountLevel>,
        u: &str,
        a: &str,
    ) -> Result<(), AppError> {
        rename_account_with(&lock, a, "second").await
    }

    /// Write a resource of another tree with this account's proof.
    #[hierlocked(user = u, account = a)]
    async fn overwrite(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        row: resource::Model,
    ) -> Result<(), AppError> {
        let mut row: resource::ActiveModel = row.into();
        row.balance = Set(0);
        resource::Entity::update(row).exec(&lock).await?;
        Ok(())
    }

    /// Insert a resource row under the resource proof of another resource.
    #[hierlocked(user = u, account = a, resource = r)]
    async fn insert_other(
        &self,
        txn: &DatabaseTransaction,
        u: &str,
        a: &str,
        r: &str,
        other: &str,
    ) -> Result<(), AppError> {
        let row = resource::ActiveModel {
            id: Set(other.to_owned()),
            user_id: Set(u.to_owned()),
            account_id: Set(a.to_owned()),
            balance: Set(0),
        };
        resource::Entity::insert(row).exec(&lock).await?;
        Ok(())
    }
}

async fn rename_account_with(
    lock: &Locked<'_, AccountLevel>,
    a: &str,
    name: &str,
) -> Result<(), AppError> {
    let row = account::Entity::find_by_id(a)
        .one(lock.txn())
        .await?
        .ok_or_else(|| AppError::Missing(a.to_owned()))?;
    let mut row: account::ActiveModel = row.into();
    row.name = Set(name.to_owned());
    account::Entity::update(row).exec(lock).await?;
    Ok(())
}

/// Add `amount` to resource `r`, returning the new balance.
async fn add(lock: &Locked<'_, ResourceLevel>, r: &str, amount: i64) -> Result<i64, AppError> {
    let row = resource::Entity::find_by_id(r)
        .one(lock.txn())
        .await?
        .ok_or_else(|| AppError::Missing(r.to_owned()))?;
    let balance = row.balance + amount;
    if balance < 0 {
        return Err(AppError::Insufficient(r.to_owned()));
    }
    let mut row: resource::ActiveModel = row.into();
    row.balance = Set(balance);
    Ok(resource::Entity::update(row).exec(lock).await?.balance)
}

// ---------------------------------------------------------------- fixture

/// One test's database, repository and IDs; tests run one at a time.
struct Fixture {
    db: DatabaseConnection,
    repo: Arc<Repo>,
    prefix: String,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl Fixture {
    /// Connect, provision, create the entity tables, delete this test's rows.
    async fn new(test: &str) -> Fixture {
        let serial = SERIAL.lock().await;
        let url = std::env::var("HIERLOCK_MARIADB_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
        let db = Database::connect(&url).await.unwrap_or_else(|e| {
            panic!("MariaDB at {url} is unreachable ({e}); start it or set HIERLOCK_MARIADB_URL")
        });
        let config = Config::default()
            .with_table(TABLE)
            .and_then(|c| c.with_bucket_space(BUCKETS))
            .expect("a valid configuration");
        Provision::new(config.clone())
            .run(&db)
            .await
            .expect("provision the bucket table");
        let schema = Schema::new(db.get_database_backend());
        for mut table in [
            schema.create_table_from_entity(user::Entity),
            schema.create_table_from_entity(account::Entity),
            schema.create_table_from_entity(resource::Entity),
        ] {
            table.if_not_exists();
            db.execute(&table).await.expect("create an entity table");
        }
        let prefix = format!("{test}-");
        for (table, column) in [
            ("hlm_resources", "user_id"),
            ("hlm_accounts", "user_id"),
            ("hlm_users", "id"),
        ] {
            db.execute_raw(Statement::from_sql_and_values(
                db.get_database_backend(),
                format!("DELETE FROM {table} WHERE {column} LIKE ?"),
                [format!("{prefix}%").into()],
            ))
            .await
            .expect("delete the test's rows");
        }
        let locker = Locker::connect(&db, config)
            .await
            .expect("connect the locker");
        Fixture {
            db,
            repo: Arc::new(Repo { locker }),
            prefix,
            _serial: serial,
        }
    }

    /// This test's ID `name`.
    fn id(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// A tree `u` / `a` / `r1`, `r2`, committed.
    async fn tree(&self, u: &str, a: &str) {
        let txn = self.db.begin().await.expect("begin");
        let rs = [self.id("r1"), self.id("r2")];
        let names: Vec<String> = rs
            .iter()
            .map(|r| format!("{r}-{}", a.trim_start_matches(&self.prefix)))
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.repo
            .create_tree(&txn, u, a, &names)
            .await
            .expect("create the tree");
        txn.commit().await.expect("commit the tree");
    }

    async fn balance(&self, r: &str) -> i64 {
        resource::Entity::find_by_id(r)
            .one(&self.db)
            .await
            .expect("read a balance")
            .map(|row| row.balance)
            .unwrap_or_else(|| panic!("no resource {r}"))
    }

    async fn begin(&self) -> DatabaseTransaction {
        self.db.begin().await.expect("begin")
    }
}

/// `r1-a1` etc.: the resources [`Fixture::tree`] makes.
fn res(fx: &Fixture, r: &str, a: &str) -> String {
    format!("{}{r}-{a}", fx.prefix)
}

async fn connection_id(txn: &DatabaseTransaction) -> i64 {
    let row: QueryResult = txn
        .query_one_raw(Statement::from_string(
            txn.get_database_backend(),
            "SELECT CAST(CONNECTION_ID() AS SIGNED) AS id",
        ))
        .await
        .expect("read CONNECTION_ID()")
        .expect("a row");
    row.try_get("", "id").expect("the id")
}

/// Whether connection `id` is waiting for a lock right now.
async fn is_waiting(db: &DatabaseConnection, id: i64) -> bool {
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            "SELECT CAST(COUNT(*) AS SIGNED) AS n FROM information_schema.INNODB_TRX \
             WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'",
            [id.into()],
        ))
        .await
        .expect("read INNODB_TRX")
        .expect("a row");
    row.try_get::<i64>("", "n").expect("the count") > 0
}

/// Wait (at most [`PATIENCE`]) until connection `id` waits for a lock.
///
/// MariaDB serves `INNODB_TRX` from a cache that it refreshes only when the
/// previous read is more than 0.1 s old: polled faster, the view never
/// changes, and a read right after an earlier one may show that earlier
/// state (of a pooled connection that had the same id). So read only after
/// 150 ms without reads (and know that another session polling faster
/// freezes the view for everyone).
async fn until_waiting(db: &DatabaseConnection, id: i64) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if is_waiting(db, id).await {
                break;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("connection {id} never waited for a lock"));
}

/// Run `call` on a new transaction while `holder` holds its locks, and say
/// whether it had to wait for them. The holder is rolled back; the call's
/// transaction too.
async fn blocks<F, Fut>(fx: &Fixture, holder: DatabaseTransaction, call: F) -> bool
where
    F: FnOnce(Arc<Repo>, Arc<DatabaseTransaction>) -> Fut,
    Fut: Future<Output = Result<(), AppError>> + Send + 'static,
{
    let txn = Arc::new(fx.begin().await);
    let id = connection_id(&txn).await;
    let mut task = tokio::spawn(call(fx.repo.clone(), txn.clone()));
    // Either the call finishes while the holder still holds (not blocked),
    // or its connection shows up waiting.
    let blocked = tokio::select! {
        done = &mut task => {
            done.expect("the call panicked").expect("the call failed");
            false
        }
        () = until_waiting(&fx.db, id) => true,
    };
    holder.rollback().await.expect("release the holder");
    if blocked {
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("the blocked call never finished after the holder let go")
            .expect("the call panicked")
            .expect("the call failed once unblocked");
    }
    Arc::into_inner(txn)
        .expect("the call is done with its transaction")
        .rollback()
        .await
        .expect("roll the call back");
    blocked
}

// ---------------------------------------------------------------- tests

/// The seed's compatibility matrix, each cell a pair of repository methods.
#[tokio::test]
async fn repository_methods_reproduce_the_compatibility_matrix() {
    let fx = Fixture::new("m1").await;
    let (u1, u2) = (fx.id("u1"), fx.id("u2"));
    let (a1, a2) = (fx.id("a1"), fx.id("a2"));
    fx.tree(&u1, &a1).await;
    fx.tree(&u2, &a2).await;
    let (r1, r2) = (res(&fx, "r1", "a1"), res(&fx, "r2", "a1"));
    let other = res(&fx, "r1", "a2");
    let keys: Vec<_> = [
        Target::user(&u1),
        Target::user(&u2),
        Target::account(&u1, &a1),
        Target::resource(&u1, &a1, &r1),
        Target::resource(&u1, &a1, &r2),
    ]
    .into_iter()
    .map(|t| {
        let depth = t.path().len();
        fx.repo.locker.plan(&[t.write()]).expect("plan").locks()[depth - 1].key
    })
    .collect();
    let distinct: std::collections::BTreeSet<_> = keys.iter().collect();
    assert_eq!(
        distinct.len(),
        keys.len(),
        "the test's IDs must not share buckets"
    );

    type Call = Box<
        dyn FnOnce(
            Arc<Repo>,
            Arc<DatabaseTransaction>,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<(), AppError>> + Send>>,
    >;
    let deposit = |u: &str, a: &str, r: &str| -> Call {
        let (u, a, r) = (u.to_owned(), a.to_owned(), r.to_owned());
        Box::new(move |repo, txn| {
            Box::pin(async move { repo.deposit(&txn, &u, &a, &r, 1).await.map(drop) })
        })
    };
    let rename_account = |u: &str, a: &str| -> Call {
        let (u, a) = (u.to_owned(), a.to_owned());
        Box::new(move |repo, txn| {
            Box::pin(async move { repo.rename_account(&txn, &u, &a, "x").await })
        })
    };
    let read_account = |u: &str, a: &str| -> Call {
        let (u, a) = (u.to_owned(), a.to_owned());
        Box::new(move |repo, txn| {
            Box::pin(async move { repo.account_total(&txn, &u, &a).await.map(drop) })
        })
    };
    let rename_user = |u: &str| -> Call {
        let u = u.to_owned();
        Box::new(move |repo, txn| Box::pin(async move { repo.rename_user(&txn, &u, "x").await }))
    };

    // (what the holder does, what the asker does, whether the asker waits)
    let cases: Vec<(&str, Call, Call, bool)> = vec![
        (
            "resource blocks same resource",
            deposit(&u1, &a1, &r1),
            deposit(&u1, &a1, &r1),
            true,
        ),
        (
            "resource allows different resource same account",
            deposit(&u1, &a1, &r1),
            deposit(&u1, &a1, &r2),
            false,
        ),
        (
            "account blocks resource under same account",
            rename_account(&u1, &a1),
            deposit(&u1, &a1, &r1),
            true,
        ),
        (
            "resource blocks account above it",
            deposit(&u1, &a1, &r1),
            rename_account(&u1, &a1),
            true,
        ),
        (
            "user blocks account under same user",
            rename_user(&u1),
            rename_account(&u1, &a1),
            true,
        ),
        (
            "user blocks resource under same user",
            rename_user(&u1),
            deposit(&u1, &a1, &r1),
            true,
        ),
        (
            "user allows different user",
            rename_user(&u1),
            deposit(&u2, &a2, &other),
            false,
        ),
        (
            "readers of one account coexist",
            read_account(&u1, &a1),
            read_account(&u1, &a1),
            false,
        ),
        (
            "a reader blocks a writer of the account",
            read_account(&u1, &a1),
            rename_account(&u1, &a1),
            true,
        ),
    ];
    for (name, hold, ask, expected) in cases {
        let holder = fx.begin().await;
        let holder = Arc::new(holder);
        hold(fx.repo.clone(), holder.clone())
            .await
            .unwrap_or_else(|e| panic!("{name}: the holder failed: {e}"));
        let holder = Arc::into_inner(holder).expect("the holder's call is done");
        let waited = blocks(&fx, holder, ask).await;
        assert_eq!(waited, expected, "{name}");
    }
}

#[tokio::test]
async fn the_locks_and_the_writes_commit_together() {
    let fx = Fixture::new("m2").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let r = res(&fx, "r1", "a1");

    let txn = fx.begin().await;
    assert_eq!(
        fx.repo.deposit(&txn, &u, &a, &r, 5).await.expect("deposit"),
        105
    );
    // Held until the commit: another transaction cannot take it.
    let other = fx.begin().await;
    let err = fx
        .repo
        .deposit_nowait(&other, &u, &a, &r, 1)
        .await
        .expect_err("the resource is locked");
    assert_eq!(err.lock_kind(), Some(ErrorKind::WouldBlock));
    other.rollback().await.expect("rollback");
    txn.commit().await.expect("commit");
    assert_eq!(fx.balance(&r).await, 105);

    // Released by the commit.
    let txn = fx.begin().await;
    fx.repo
        .deposit_nowait(&txn, &u, &a, &r, 1)
        .await
        .expect("free after the commit");
    txn.commit().await.expect("commit");
    assert_eq!(fx.balance(&r).await, 106);
}

/// `hierlock::retry` runs a repository method again after a retryable
/// failure, on a new transaction, and commits once.
#[tokio::test]
async fn retry_runs_a_repository_method_until_its_locks_are_free() {
    let fx = Fixture::new("m7").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let r = res(&fx, "r1", "a1");
    let holder = fx.begin().await;
    fx.repo
        .deposit(&holder, &u, &a, &r, 0)
        .await
        .expect("the holder locks r1");
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let policy = hierlock::RetryPolicy::default()
        .with_max_attempts(50)
        .with_backoff(Duration::from_millis(20), Duration::from_millis(50));
    let (deposited, ()) = tokio::join!(
        hierlock::retry(&fx.db, &policy, async |txn| {
            attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            fx.repo.deposit_nowait(txn, &u, &a, &r, 7).await
        }),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            holder.rollback().await.expect("release");
        }
    );
    assert_eq!(deposited.expect("retried until free"), 107);
    assert!(
        attempts.load(std::sync::atomic::Ordering::SeqCst) > 1,
        "the first attempt met the holder"
    );
    assert_eq!(fx.balance(&r).await, 107, "committed once");
}

#[tokio::test]
async fn the_locks_and_the_writes_roll_back_together() {
    let fx = Fixture::new("m3").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let (r1, r2) = (res(&fx, "r1", "a1"), res(&fx, "r2", "a1"));

    // The body writes `to` and then fails on `from`: the caller rolls back.
    let txn = fx.begin().await;
    let err = fx
        .repo
        .transfer(&txn, &u, &a, &r1, &r2, 1_000)
        .await
        .expect_err("not enough in r1");
    assert!(matches!(err, AppError::Insufficient(_)), "{err}");
    txn.rollback().await.expect("rollback");
    assert_eq!((fx.balance(&r1).await, fx.balance(&r2).await), (100, 100));

    // The rollback released both resources.
    let txn = fx.begin().await;
    for r in [&r1, &r2] {
        fx.repo
            .deposit_nowait(&txn, &u, &a, r, 0)
            .await
            .expect("free after the rollback");
    }
    txn.rollback().await.expect("rollback");

    // A failed lock runs no body: nothing is written.
    let holder = fx.begin().await;
    fx.repo
        .deposit(&holder, &u, &a, &r1, 0)
        .await
        .expect("hold r1");
    let txn = fx.begin().await;
    let err = fx
        .repo
        .deposit_patiently(&txn, &u, &a, &r1, 50)
        .await
        .expect_err("r1 is held");
    let AppError::Lock(lock_err) = &err else {
        panic!("expected a lock error, got {err}");
    };
    assert_eq!(lock_err.kind(), ErrorKind::LockTimeout);
    assert!(lock_err.is_retryable());
    txn.rollback().await.expect("rollback");
    holder.rollback().await.expect("rollback");
    assert_eq!(fx.balance(&r1).await, 100);
}

#[tokio::test]
async fn several_resources_are_locked_in_one_acquisition() {
    let fx = Fixture::new("m4").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let (r1, r2) = (res(&fx, "r1", "a1"), res(&fx, "r2", "a1"));

    let holder = fx.begin().await;
    fx.repo
        .transfer(&holder, &u, &a, &r1, &r2, 10)
        .await
        .expect("transfer");
    let (u2, a2, r2b) = (u.clone(), a.clone(), r2.clone());
    let waited = blocks(&fx, holder, move |repo, txn| async move {
        repo.deposit(&txn, &u2, &a2, &r2b, 1).await.map(drop)
    })
    .await;
    assert!(
        waited,
        "a deposit into the second resource waits for the transfer"
    );
}

#[tokio::test]
async fn two_annotated_calls_compose_in_one_transaction() {
    let fx = Fixture::new("m5").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let (r1, r2) = (res(&fx, "r1", "a1"), res(&fx, "r2", "a1"));

    // Two independent calls on one transaction, committed together.
    let txn = fx.begin().await;
    fx.repo
        .deposit(&txn, &u, &a, &r1, 1)
        .await
        .expect("first call");
    fx.repo
        .deposit(&txn, &u, &a, &r2, 2)
        .await
        .expect("second call");
    txn.commit().await.expect("commit");
    assert_eq!((fx.balance(&r1).await, fx.balance(&r2).await), (101, 102));

    // A call within an enclosing proof: its locks come after the enclosing
    // ones (the account, then a resource under it), so it is in order.
    let txn = fx.begin().await;
    let balance = fx
        .repo
        .rename_and_deposit(&txn, &u, &a, &r1)
        .await
        .expect("composed calls");
    assert_eq!(balance, 102);
    txn.rollback().await.expect("rollback");
    assert_eq!(fx.balance(&r1).await, 101, "rolled back together");

    // The same inner method works on its own, without an enclosing proof.
    let txn = fx.begin().await;
    fx.repo
        .deposit_within(&txn, None, &u, &a, &r1, 1)
        .await
        .expect("on its own");
    txn.commit().await.expect("commit");
    assert_eq!(fx.balance(&r1).await, 102);
}

#[tokio::test]
async fn a_call_within_a_proof_out_of_the_global_order_is_refused() {
    let fx = Fixture::new("m6").await;
    let u = fx.id("u1");
    // Two accounts of one user, named so that their account keys are ordered.
    let (mut low, mut high) = (fx.id("a1"), fx.id("a2"));
    let key = |a: &str| {
        fx.repo
            .locker
            .plan(&[Target::account(&u, a).write()])
            .expect("plan")
            .locks()[1]
            .key
    };
    if key(&low) > key(&high) {
        std::mem::swap(&mut low, &mut high);
    }
    fx.tree(&u, &low).await;
    let txn = fx.begin().await;
    fx.repo
        .add_account(&txn, &u, &high)
        .await
        .expect("second account");
    txn.commit().await.expect("commit");

    // In order: holding `low`, lock `high` within it.
    let txn = fx.begin().await;
    fx.repo
        .two_accounts(&txn, &u, &low, &high)
        .await
        .expect("in order");
    txn.rollback().await.expect("rollback");

    // Out of order: holding `high`, lock `low` within it.
    let txn = fx.begin().await;
    let err = fx
        .repo
        .two_accounts(&txn, &u, &high, &low)
        .await
        .expect_err("out of order");
    let AppError::Lock(lock_err) = &err else {
        panic!("expected a lock error, got {err}");
    };
    assert_eq!(lock_err.kind(), ErrorKind::Misuse, "{lock_err}");
    assert_eq!(lock_err.txn_state(), TxnState::Unchanged);
    assert!(
        lock_err
            .to_string()
            .contains("out of the global lock order"),
        "{lock_err}"
    );
    // Nothing was taken for `low`: another transaction gets it at once.
    let other = fx.begin().await;
    fx.repo
        .rename_account(&other, &u, &low, "free")
        .await
        .expect("low was never locked");
    other.rollback().await.expect("rollback");
    txn.rollback().await.expect("rollback");
}

#[tokio::test]
async fn a_proof_of_another_transaction_is_refused() {
    let fx = Fixture::new("m7").await;
    let (u, a) = (fx.id("u1"), fx.id("a1"));
    fx.tree(&u, &a).await;
    let r = res(&fx, "r1", "a1");
    let first = fx.begin().await;
    let second = fx.begin().await;
    let err = fx
        .repo
        .cross(&first, &second, &u, &a, &r)
        .await
        .expect_err("the proof belongs to the first transaction");
    assert_eq!(err.lock_kind(), Some(ErrorKind::Misuse), "{err}");
    second.rollback().await.expect("rollback");
    first.rollback().await.expect("rollback");
}

#[tokio::test]
async fn a_proof_cannot_write_a_row_it_does_not_cover() {
    let fx = Fixture::new("m8").await;
    let (u1, a1, u2, a2) = (fx.id("u1"), fx.id("a1"), fx.id("u2"), fx.id("a2"));
    fx.tree(&u1, &a1).await;
    fx.tree(&u2, &a2).await;
    let victim_id = res(&fx, "r1", "a2");
    let victim = resource::Entity::find_by_id(victim_id.as_str())
        .one(&fx.db)
        .await
        .expect("read")
        .expect("the victim row");

    let txn = fx.begin().await;
    let err = fx
        .repo
        .overwrite(&txn, &u1, &a1, victim)
        .await
        .expect_err("u1/a1's proof does not cover u2's resource");
    assert_eq!(err.lock_kind(), Some(ErrorKind::NotCovered), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("Resource({u2}/{a2}/{victim_id})")),
        "{err}"
    );
    txn.commit().await.expect("commit");
    assert_eq!(fx.balance(&victim_id).await, 100, "nothing written");

    // A resource proof covers its own resource only.
    let txn = fx.begin().await;
    let err = fx
        .repo
        .insert_other(&txn, &u1, &a1, &res(&fx, "r1", "a1"), &fx.id("r9"))
        .await
        .expect_err("r9 is not r1");
    assert_eq!(err.lock_kind(), Some(ErrorKind::NotCovered), "{err}");
    fx.repo
        .insert_other(&txn, &u1, &a1, &fx.id("r9"), &fx.id("r9"))
        .await
        .expect("r9 under its own proof");
    txn.commit().await.expect("commit");
    assert_eq!(fx.balance(&fx.id("r9")).await, 0);
}
