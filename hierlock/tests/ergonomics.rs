//! Ergonomics of `#[hierlocked]`, run on SQLite (a file in the temporary
//! directory; no server needed): `#[async_trait]` repository traits used as
//! `dyn` objects, proofs returned with the transaction's lifetime, `DbErr`
//! as the error type, and generic transaction parameters bounded by
//! `hierlock::AsTransaction`.

use std::sync::Arc;

use async_trait::async_trait;
use hierlock::proof::AccountLevel;
use hierlock::sea_orm::{
    ActiveValue::Set, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbErr,
    Schema, TransactionTrait,
};
use hierlock::{AsTransaction, Config, ErrorKind, HasLocker, Locked, Locker, hierlocked};

#[hierlock::protected(level = account, user = user_id, account = id)]
mod account {
    use hierlock::sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "ergonomics_accounts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub user_id: i64,
        pub balance: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}
}

async fn database(name: &str) -> DatabaseConnection {
    let path = std::env::temp_dir().join(format!(
        "hierlock-ergonomics-{name}-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let db = Database::connect(format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .expect("SQLite opens");
    let table = Schema::new(db.get_database_backend()).create_table_from_entity(account::Entity);
    db.execute(&table).await.expect("table created");
    db
}

async fn locker(db: &DatabaseConnection) -> Locker {
    Locker::connect(db, Config::default())
        .await
        .expect("locker")
}

fn row(user_id: i64, id: i64, balance: i64) -> account::ActiveModel {
    account::ActiveModel {
        id: Set(id),
        user_id: Set(user_id),
        balance: Set(balance),
    }
}

async fn balance(db: &DatabaseConnection, id: i64) -> Option<i64> {
    account::Entity::find_by_id(id)
        .one(db)
        .await
        .expect("read")
        .map(|r| r.balance)
}

// --- #[async_trait]: a dyn-compatible repository trait --------------------

/// A repository trait used as `Arc<dyn Accounts>`: `#[async_trait]` on the
/// trait and its impl, `#[hierlocked]` on the methods (async-trait runs
/// first; the lock prologue goes inside its `Box::pin(async move { .. })`).
#[async_trait]
trait Accounts: Send + Sync {
    async fn open(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        id: i64,
        balance: i64,
    ) -> Result<(), DbErr>;

    /// A default method, locked the same way.
    #[hierlocked(user = user, account = id, locker = self.locker_of())]
    async fn close(&self, txn: &DatabaseTransaction, user: i64, id: i64) -> hierlock::Result<u64> {
        account::Entity::delete_by_id(id).exec(&lock).await
    }

    fn locker_of(&self) -> &Locker;
}

struct Repo {
    locker: Locker,
}

impl HasLocker for Repo {
    fn locker(&self) -> &Locker {
        &self.locker
    }
}

#[async_trait]
impl Accounts for Repo {
    /// `DbErr` as the error type: a lock failure or an uncovered write is a
    /// `DbErr` (`From<hierlock::Error> for DbErr`).
    #[hierlocked(user = user, account = id)]
    async fn open(
        &self,
        txn: &DatabaseTransaction,
        user: i64,
        id: i64,
        balance: i64,
    ) -> Result<(), DbErr> {
        account::Entity::insert(row(user, id, balance))
            .exec(&lock)
            .await?;
        Ok(())
    }

    fn locker_of(&self) -> &Locker {
        &self.locker
    }
}

#[tokio::test]
async fn async_trait_methods_lock_and_write_through_dyn() {
    let db = database("async-trait").await;
    let repo: Arc<dyn Accounts> = Arc::new(Repo {
        locker: locker(&db).await,
    });

    let txn = db.begin().await.expect("begin");
    repo.open(&txn, 1, 10, 5).await.expect("open");
    txn.commit().await.expect("commit");
    assert_eq!(balance(&db, 10).await, Some(5));

    // The future is `Send`: it runs on another task.
    let task = {
        let (repo, db) = (repo.clone(), db.clone());
        tokio::spawn(async move {
            let txn = db.begin().await.expect("begin");
            let deleted = repo.close(&txn, 1, 10).await.expect("close");
            txn.commit().await.expect("commit");
            deleted
        })
    };
    assert_eq!(task.await.expect("task"), 1);
    assert_eq!(balance(&db, 10).await, None);
}

// --- DbErr as the error type ----------------------------------------------

impl Repo {
    /// Writes user 2's account with user 1's proof: refused, as a `DbErr`.
    #[hierlocked(user = 1, account = 10)]
    async fn open_for_someone_else(&self, txn: &DatabaseTransaction) -> Result<(), DbErr> {
        account::Entity::insert(row(2, 20, 0)).exec(&lock).await?;
        Ok(())
    }
}

#[tokio::test]
async fn db_err_methods_get_hierlock_errors_as_db_errs() {
    let db = database("db-err").await;
    let repo = Repo {
        locker: locker(&db).await,
    };
    let txn = db.begin().await.expect("begin");
    let err = repo
        .open_for_someone_else(&txn)
        .await
        .expect_err("not covered");
    txn.rollback().await.expect("rollback");
    match &err {
        DbErr::Custom(message) => {
            assert!(
                message.contains("is not covered by the locks held"),
                "{message}"
            )
        }
        other => panic!("expected DbErr::Custom, got {other:?}"),
    }
    assert_eq!(balance(&db, 20).await, None);
}

// --- proofs with the transaction's lifetime -------------------------------

impl Repo {
    /// Returns the proof: it borrows the transaction (`'t`), not the
    /// parameter.
    #[hierlocked(user = user, account = id)]
    async fn lock_account<'t>(
        &self,
        txn: &'t DatabaseTransaction,
        user: i64,
        id: i64,
    ) -> hierlock::Result<Locked<'t, AccountLevel>> {
        Ok(lock)
    }
}

#[tokio::test]
async fn a_returned_proof_writes_in_the_callers_code() {
    let db = database("returned-proof").await;
    let repo = Repo {
        locker: locker(&db).await,
    };
    let txn = db.begin().await.expect("begin");
    let proof = repo.lock_account(&txn, 1, 10).await.expect("lock");
    account::Entity::insert(row(1, 10, 7))
        .exec(&proof)
        .await
        .expect("covered");
    let err = account::Entity::insert(row(1, 11, 7))
        .exec(&proof)
        .await
        .expect_err("another account");
    assert_eq!(err.kind(), ErrorKind::NotCovered);
    drop(proof);
    txn.commit().await.expect("commit");
    assert_eq!(balance(&db, 10).await, Some(7));
    assert_eq!(balance(&db, 11).await, None);
}

// --- generic transaction parameters ---------------------------------------

/// The application's unit of work: it holds the transaction.
struct UnitOfWork {
    txn: DatabaseTransaction,
}

impl AsTransaction for UnitOfWork {
    fn as_transaction(&self) -> &DatabaseTransaction {
        &self.txn
    }
}

impl Repo {
    /// Any transaction-like parameter: `txn = ..` names it.
    #[hierlocked(txn = work, user = user, account = id)]
    async fn deposit<C: AsTransaction + Sync>(
        &self,
        work: &C,
        user: i64,
        id: i64,
        amount: i64,
    ) -> hierlock::Result<account::Model> {
        let current = account::Entity::find_by_id(id)
            .one(work.as_transaction())
            .await
            .map_err(|e| hierlock::Error::database("reading the account", e))?;
        let balance = current.map_or(0, |r| r.balance) + amount;
        account::Entity::update(row(user, id, balance))
            .exec(&lock)
            .await
    }
}

#[tokio::test]
async fn generic_transaction_parameters_take_their_locks() {
    let db = database("generic-txn").await;
    let repo = Repo {
        locker: locker(&db).await,
    };
    let txn = db.begin().await.expect("begin");
    repo.open(&txn, 1, 10, 5).await.expect("open");
    txn.commit().await.expect("commit");

    // A unit of work of the application…
    let work = UnitOfWork {
        txn: db.begin().await.expect("begin"),
    };
    repo.deposit(&work, 1, 10, 1).await.expect("deposit");
    work.txn.commit().await.expect("commit");
    // …and a plain transaction, through the same generic method.
    let txn = db.begin().await.expect("begin");
    repo.deposit(&txn, 1, 10, 1).await.expect("deposit");
    txn.commit().await.expect("commit");
    assert_eq!(balance(&db, 10).await, Some(7));
}

/// `retry` in a spawned task, with the work as `async move |txn|` (as
/// `retry`'s docs say: a borrowing `async |txn|` is not provably `Send`).
#[tokio::test]
async fn retry_runs_in_a_spawned_task() {
    let db = database("spawnretry").await;
    let locker = locker(&db).await;
    let task = tokio::spawn(async move {
        let policy = hierlock::RetryPolicy::default();
        hierlock::retry(&db, &policy, async move |txn| {
            locker
                .acquire(txn, [hierlock::Target::account("1", "10").write()])
                .await?;
            Ok::<_, hierlock::Error>(7)
        })
        .await
    });
    assert_eq!(task.await.expect("joined").expect("committed"), 7);
}
