//! `Locker::acquire_reading`: the locks and the rows they protect, read
//! once every lock is held (on the MySQL family in the lock statement).

use std::time::Duration;

use hierlock::{Error, ErrorKind, Target, TxnState, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction,
    EntityTrait, IsolationLevel, QueryFilter, QuerySelect, Schema, TransactionTrait,
};

mod ledger {
    use sea_orm::entity::prelude::*;

    /// A row of each kind of column a service reads: text, a flag, a
    /// nullable note, a UUID.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "reading_ledger")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
        pub account: String,
        pub balance: i64,
        pub frozen: bool,
        pub note: Option<String>,
        pub key: Uuid,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Resource `id` of account `a1` of user `u1`.
fn resource(id: i64) -> Target {
    Target::resource("u1", "a1", id)
}

/// The ledger table (made once per server: the tests of this module run at
/// once, each on its own rows), with exactly `ids` of the rows from `first`
/// to `last`.
async fn ledger_with(fx: &Fixture, (first, last): (i64, i64), ids: &[i64]) {
    static CREATING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let schema = Schema::new(fx.db.get_database_backend());
    {
        let _one_at_a_time = CREATING.lock().await;
        let mut create = schema.create_table_from_entity(ledger::Entity);
        fx.db
            .execute(create.if_not_exists())
            .await
            .expect("create the ledger");
    }
    ledger::Entity::delete_many()
        .filter(ledger::Column::Id.between(first, last))
        .exec(&fx.db)
        .await
        .expect("clear");
    for &id in ids {
        row(id, 100).insert(&fx.db).await.expect("insert");
    }
}

/// An entity whose table does not exist.
/// The ledger's rows of the cancellation tests (ids 4001 to 4002).
pub(crate) async fn prepare_ledger(fx: &Fixture) {
    ledger_with(fx, (4001, 4002), &[4001, 4002]).await;
}

/// `acquire_reading_with` of `requests`, reading the rows of
/// [`prepare_ledger`]: the number of statements, or the error.
pub(crate) async fn take_reading(
    fx: &Fixture,
    txn: &DatabaseTransaction,
    requests: &[hierlock::Request],
    wait: Wait,
) -> Result<usize, Error> {
    let select = ledger::Entity::find().filter(ledger::Column::Id.between(4001, 4002));
    let (locks, rows) = fx
        .locker
        .acquire_reading_with(txn, requests.iter().cloned(), select, wait)
        .await?;
    assert_eq!(rows.len(), 2, "the ledger's rows");
    Ok(locks.statements())
}

mod missing {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "reading_no_such_table")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

fn row(id: i64, balance: i64) -> ledger::ActiveModel {
    ledger::ActiveModel {
        id: Set(id),
        account: Set(format!("a{id}")),
        balance: Set(balance),
        frozen: Set(id % 2 == 0),
        note: Set((id % 3 == 0).then(|| format!("note {id}"))),
        key: Set(sea_orm::prelude::Uuid::from_u128(id as u128 * 0x1_0001)),
    }
}

async fn read_balances(
    fx: &Fixture,
    txn: &DatabaseTransaction,
    ids: &[i64],
    wait: Wait,
) -> Result<(usize, Vec<(i64, i64)>), Error> {
    let targets: Vec<_> = ids.iter().map(|&id| resource(id).write()).collect();
    let select = ledger::Entity::find().filter(ledger::Column::Id.is_in(ids.to_vec()));
    let (locks, rows) = fx
        .locker
        .acquire_reading_with(txn, targets, select, wait)
        .await?;
    let mut read: Vec<(i64, i64)> = rows.iter().map(|r| (r.id, r.balance)).collect();
    read.sort_unstable();
    Ok((locks.statements(), read))
}

/// The rows come back whole (every column type), a target without a row
/// reads nothing, and on the MySQL family the read is the lock statement
/// itself: the server counts one statement for the acquisition and its read.
pub async fn acquire_reading_returns_the_rows_with_the_locks(backend: Backend) {
    let fx = Fixture::new(backend, "reading", 1000).await;
    ledger_with(&fx, (1, 6), &[1, 2, 3, 6]).await;
    let txn = fx.begin().await;
    let before = questions(&fx, &txn).await;
    let targets = [2, 3, 4, 6].map(|id| resource(id).write());
    let (locks, mut rows) = fx
        .locker
        .acquire_reading(
            &txn,
            targets,
            ledger::Entity::find().filter(ledger::Column::Id.is_in([2, 3, 4, 6])),
        )
        .await
        .expect("acquire and read");
    let after = questions(&fx, &txn).await;
    rows.sort_by_key(|r| r.id);
    let expected: Vec<ledger::Model> = [2, 3, 6]
        .into_iter()
        .map(|id| {
            let am = row(id, 100);
            ledger::Model {
                id,
                account: am.account.unwrap(),
                balance: 100,
                frozen: am.frozen.unwrap(),
                note: am.note.unwrap(),
                key: am.key.unwrap(),
            }
        })
        .collect();
    assert_eq!(rows, expected);
    if let (Some(before), Some(after)) = (before, after) {
        // The counter read itself is one of them.
        assert_eq!(after - before - 1, 1, "one statement locks and reads");
        assert_eq!(locks.statements(), 1);
    }
    for target in [2, 3, 4, 6] {
        assert!(locks.covers(&resource(target), hierlock::Access::Write));
    }
    // A chosen column list is replaced by the entity's.
    let (_, narrowed) = fx
        .locker
        .acquire_reading(
            &txn,
            [resource(1).write()],
            ledger::Entity::find()
                .select_only()
                .column(ledger::Column::Id)
                .filter(ledger::Column::Id.eq(1)),
        )
        .await
        .expect("acquire and read");
    assert_eq!(narrowed.len(), 1);
    assert_eq!(narrowed[0].account, "a1");
    // No lock to take: the read alone.
    let (none, all) = fx
        .locker
        .acquire_reading(
            &txn,
            Vec::<Target>::new(),
            ledger::Entity::find().filter(ledger::Column::Id.between(1, 6)),
        )
        .await
        .expect("read");
    assert_eq!(none.statements(), 0);
    assert_eq!(all.len(), 4);
    txn.rollback().await.expect("rollback");
}

/// The server's count of statements received (MySQL family).
async fn questions(fx: &Fixture, txn: &DatabaseTransaction) -> Option<i64> {
    if !fx.locker.dialect().is_mysql_family() {
        return None;
    }
    Some(crate::support::session_questions(txn).await as i64)
}

/// A reader that waits reads what the holder committed, under both
/// isolation levels: the read runs after the wait, not before it.
pub async fn acquire_reading_after_a_wait_sees_the_holders_commit(backend: Backend) {
    let fx = Fixture::new(backend, "reading_wait", 1000).await;
    ledger_with(&fx, (7, 7), &[7]).await;
    // PostgreSQL's REPEATABLE READ takes the snapshot at the lock
    // statement, before its wait (documented: use READ COMMITTED there).
    let isolations: &[Option<IsolationLevel>] = match backend {
        Backend::Sqlite | Backend::SqliteWithoutHandler => &[None],
        Backend::Postgres | Backend::PostgresBuckets => &[Some(IsolationLevel::ReadCommitted)],
        Backend::MariaDb | Backend::MySql => &[
            Some(IsolationLevel::RepeatableRead),
            Some(IsolationLevel::ReadCommitted),
        ],
    };
    for (round, &isolation) in isolations.iter().enumerate() {
        let balance = 200 + round as i64;
        let holder = fx.begin().await;
        fx.locker
            .acquire(&holder, [resource(7).write()])
            .await
            .expect("holder locks");
        ledger::Entity::update(row(7, balance))
            .exec(&holder)
            .await
            .expect("holder writes");
        let reader = {
            let fx_db = fx.db.clone();
            let locker = fx.locker.clone();
            tokio::spawn(async move {
                let txn = fx_db
                    .begin_with_config(isolation, None)
                    .await
                    .expect("begin");
                let (_, rows) = locker
                    .acquire_reading(&txn, [resource(7).write()], ledger::Entity::find_by_id(7))
                    .await
                    .expect("reader waits, then locks and reads");
                txn.rollback().await.expect("rollback");
                rows
            })
        };
        // Long enough for the reader to be waiting on the holder's lock.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!reader.is_finished(), "the reader waits for the holder");
        holder.commit().await.expect("holder commits");
        let rows = bounded("the reader", reader).await.expect("reader");
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0].balance, balance,
            "{isolation:?}: the holder's commit"
        );
    }
}

/// Two transactions read rows that do not exist yet, next to each other
/// (one gap of the table's index), then insert them: neither waits for the
/// other. A locking read of a missing row would take a gap lock on the
/// MySQL family, and the two inserts would deadlock.
pub async fn acquire_reading_of_missing_rows_then_inserting_them_never_deadlocks(backend: Backend) {
    let fx = Fixture::new(backend, "reading_gap", 1000).await;
    ledger_with(&fx, (1010, 1030), &[1010, 1030]).await;
    // Two resources in distinct buckets (a shared bucket would serialize
    // them, which proves nothing).
    let plan = |id: i64| fx.locker.plan(&[resource(id).write()]).expect("plan");
    let first = 1020;
    let second = (1021..1030)
        .find(|&id| plan(id).locks() != plan(first).locks())
        .expect("two resources in distinct buckets");
    let one = fx.begin().await;
    let two = fx.begin().await;
    for (txn, id) in [(&one, first), (&two, second)] {
        let (_, rows) = fx
            .locker
            .acquire_reading(txn, [resource(id).write()], ledger::Entity::find_by_id(id))
            .await
            .expect("lock and read");
        assert!(rows.is_empty());
    }
    let (a, b) = tokio::join!(row(first, 1).insert(&one), row(second, 1).insert(&two));
    a.expect("the first insert");
    b.expect("the second insert");
    one.commit().await.expect("commit");
    two.commit().await.expect("commit");
}

/// A read that fails after the locks are taken is a database error that
/// says the locks may be held; the waits are bounded as `acquire`'s.
pub async fn acquire_reading_failures_say_what_they_left(backend: Backend) {
    let fx = Fixture::new(backend, "reading_errors", 1000).await;
    ledger_with(&fx, (2001, 2001), &[2001]).await;
    let txn = fx.begin().await;
    let failed = fx
        .locker
        .acquire_reading(
            &txn,
            [resource(2001).write()],
            missing::Entity::find_by_id(2001),
        )
        .await
        .expect_err("no table to read");
    assert_eq!(failed.kind(), ErrorKind::Database, "{failed}");
    let expected = match backend {
        Backend::Postgres | Backend::PostgresBuckets => TxnState::Aborted,
        _ => TxnState::PartiallyLocked,
    };
    assert_eq!(failed.txn_state(), expected, "{failed}");
    assert!(
        failed.to_string().contains("Resource(u1/a1/2001)"),
        "{failed}"
    );
    txn.rollback().await.expect("rollback");

    let holder = fx.begin().await;
    fx.locker
        .acquire(&holder, [resource(2001).write()])
        .await
        .expect("holder");
    let waiter = fx.begin().await;
    let waited = read_balances(
        &fx,
        &waiter,
        &[2001],
        Wait::Timeout(Duration::from_millis(200)),
    )
    .await
    .expect_err("the holder has it");
    assert_eq!(waited.kind(), ErrorKind::LockTimeout, "{waited}");
    let tried = read_balances(&fx, &waiter, &[2001], Wait::NoWait).await;
    match tried {
        Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}"),
        Ok(ok) => panic!("expected WouldBlock, got {ok:?}"),
    }
    drop(waiter);
    holder.rollback().await.expect("rollback");
    let txn = fx.begin().await;
    let (_, read) = read_balances(&fx, &txn, &[2001], Wait::NoWait)
        .await
        .expect("free again");
    assert_eq!(read, vec![(2001, 100)]);
    txn.rollback().await.expect("rollback");
}

/// Move `amount` from `from` to `to`, the two rows read with their locks
/// (`rows = ..`): what the body gets is what the previous holder wrote.
#[hierlock::hierlocked(
    user = "u1",
    account = "a1",
    resources = [from, to],
    locker = locker,
    rows = ledger::Entity::find().filter(ledger::Column::Id.is_in([from, to]))
)]
async fn transfer(
    locker: &hierlock::Locker,
    txn: &DatabaseTransaction,
    from: i64,
    to: i64,
    amount: i64,
) -> Result<(), Error> {
    assert_eq!(rows.len(), 2, "both rows, read with the locks");
    for (id, delta) in [(from, -amount), (to, amount)] {
        let read = rows.iter().find(|r| r.id == id).expect("read");
        ledger::Entity::update(row(id, read.balance + delta))
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// `#[hierlocked(.., rows = ..)]` under contention: concurrent transfers
/// between two rows, each computed from the rows its acquisition read,
/// lose no update.
pub async fn hierlocked_rows_are_read_with_the_locks(backend: Backend) {
    let fx = Fixture::new(backend, "reading_attr", 1000).await;
    ledger_with(&fx, (3001, 3002), &[3001, 3002]).await;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..8_i64 {
        let (db, locker) = (fx.db.clone(), fx.locker.clone());
        tasks.spawn(async move {
            for _ in 0..5 {
                let (from, to) = if task % 2 == 0 {
                    (3001, 3002)
                } else {
                    (3002, 3001)
                };
                let txn = db.begin().await.expect("begin");
                transfer(&locker, &txn, from, to, task + 1)
                    .await
                    .expect("transfer");
                txn.commit().await.expect("commit");
            }
        });
    }
    bounded("the transfers", async {
        while let Some(done) = tasks.join_next().await {
            done.expect("a transfer task");
        }
    })
    .await;
    let rows = ledger::Entity::find()
        .filter(ledger::Column::Id.between(3001, 3002))
        .all(&fx.db)
        .await
        .expect("read");
    let balance = |id: i64| rows.iter().find(|r| r.id == id).expect("row").balance;
    // Even tasks (amounts 1, 3, 5, 7) move 3001 -> 3002, odd ones (2, 4, 6,
    // 8) back, five times each.
    let moved = 5 * ((1 + 3 + 5 + 7) - (2 + 4 + 6 + 8));
    assert_eq!(balance(3001), 100 - moved);
    assert_eq!(balance(3002), 100 + moved);
}
