//! Two-transaction choreography shared by the tests.

use std::time::Duration;

use hierlock::proof::{AccountLevel, UserLevel};
use hierlock::{Error, ErrorKind, LockSet, Locked, Locker, Request, Target, Wait, hierlocked};
use hierlock_tests::{Fixture, bounded};
use sea_orm::sea_query::TableCreateStatement;
use sea_orm::{ConnectionTrait, DatabaseTransaction};

/// Every node of the 2 users × 2 accounts × 2 resources tree, root first:
/// the matrices' nodes.
pub fn tree() -> Vec<Target> {
    let mut nodes = Vec::new();
    for u in ["u1", "u2"] {
        nodes.push(Target::user(u));
        for a in ["a1", "a2"] {
            nodes.push(Target::account(u, a));
            for r in ["r1", "r2"] {
                nodes.push(Target::resource(u, a, r));
            }
        }
    }
    nodes
}

/// Acquire `requests` on `txn` and keep only the outcome.
pub async fn take(
    fx: &Fixture,
    txn: &DatabaseTransaction,
    requests: &[Request],
    wait: Wait,
) -> Result<usize, Error> {
    fx.locker
        .acquire_with(txn, requests.iter().cloned(), wait)
        .await
        .map(|set: LockSet<'_>| set.statements())
}

/// A new transaction holding `requests`, taken without contention.
pub async fn holding(fx: &Fixture, requests: &[Request]) -> DatabaseTransaction {
    let txn = fx.begin().await;
    bounded(
        "an uncontended acquisition",
        take(fx, &txn, requests, Wait::Block),
    )
    .await
    .expect("the first acquisition is uncontended");
    txn
}

/// `wanted` must wait while `held` is held, then get its locks once `held` is released.
pub async fn assert_waits(fx: &Fixture, held: &[Request], wanted: &[Request]) {
    let t1 = holding(fx, held).await;
    let t2 = fx.begin().await;
    if !fx.backend.has_lock_wait_view() {
        let err = take(fx, &t2, wanted, Wait::NoWait)
            .await
            .expect_err("a conflicting lock must not be granted");
        assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
        t1.rollback().await.expect("rollback");
        bounded(
            "acquisition after release",
            take(fx, &t2, wanted, Wait::Block),
        )
        .await
        .expect("granted once released");
        return;
    }
    let id = fx.connection_id(&t2).await;
    let locker = fx.locker.clone();
    let wanted_owned = wanted.to_vec();
    let waiter = tokio::spawn(async move {
        let outcome = locker
            .acquire(&t2, wanted_owned)
            .await
            .map(|set| set.statements());
        (outcome, t2)
    });
    fx.wait_until_blocked(id).await;
    assert!(
        !waiter.is_finished(),
        "{wanted:?} was granted while {held:?} was held"
    );
    t1.rollback().await.expect("rollback");
    let (outcome, t2) = bounded("the waiting acquisition", waiter)
        .await
        .expect("task");
    outcome.expect("granted once released");
    t2.rollback().await.expect("rollback");
}

/// `wanted` must be granted at once while `held` is held.
pub async fn assert_coexists(fx: &Fixture, held: &[Request], wanted: &[Request]) {
    let t1 = holding(fx, held).await;
    let t2 = fx.begin().await;
    bounded("second acquisition", take(fx, &t2, wanted, Wait::NoWait))
        .await
        .unwrap_or_else(|e| panic!("{wanted:?} must not conflict with {held:?}: {e}"));
    t2.rollback().await.expect("rollback");
    t1.rollback().await.expect("rollback");
}

/// Poll until `request` can be taken at once: the server has released
/// whatever held it (a killed connection's locks go when the server notices).
pub async fn assert_free(fx: &Fixture, what: &str, request: &hierlock::Request) {
    bounded(what, async {
        loop {
            let txn = fx.begin().await;
            if take(fx, &txn, std::slice::from_ref(request), Wait::NoWait)
                .await
                .is_ok()
            {
                return;
            }
            drop(txn);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Run `body` with a write-lock proof on user `u`, on `txn`.
#[hierlocked(user = u, locker = locker)]
pub async fn as_user<T>(
    locker: &Locker,
    txn: &DatabaseTransaction,
    u: i64,
    body: impl AsyncFnOnce(&Locked<'_, UserLevel>) -> T,
) -> hierlock::Result<T> {
    Ok(body(&lock).await)
}

/// Drop `tables` (children first), then create the tables of `creates`
/// (parents first: `Schema::create_table_from_entity` of each entity).
pub async fn recreate_tables(fx: &Fixture, tables: &[&str], creates: Vec<TableCreateStatement>) {
    for table in tables {
        fx.exec(&format!("DROP TABLE IF EXISTS {table}")).await;
    }
    let backend = fx.db.get_database_backend();
    for create in creates {
        let statement = backend.build(&create);
        fx.db
            .execute_raw(statement.clone())
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

/// Run `body` with a write-lock proof on account `u/a`, on `txn`.
#[hierlocked(user = u, account = a, locker = locker)]
pub async fn as_account<T>(
    locker: &Locker,
    txn: &DatabaseTransaction,
    u: &str,
    a: &str,
    body: impl AsyncFnOnce(&Locked<'_, AccountLevel>) -> T,
) -> hierlock::Result<T> {
    Ok(body(&lock).await)
}

/// `outcome` is an error of `kind`.
#[track_caller]
pub fn assert_kind<T: std::fmt::Debug>(outcome: Result<T, Error>, kind: ErrorKind, what: &str) {
    match outcome {
        Err(e) => assert_eq!(e.kind(), kind, "{what}: {e}"),
        Ok(v) => panic!("{what}: expected {kind:?}, got Ok({v:?})"),
    }
}

/// The server's count of the statements `txn`'s session received
/// (`Questions`; MySQL family), this reading included.
pub async fn session_questions(txn: &DatabaseTransaction) -> u64 {
    let row = txn
        .query_one_raw(sea_orm::Statement::from_string(
            sea_orm::DbBackend::MySql,
            "SHOW SESSION STATUS LIKE 'Questions'",
        ))
        .await
        .expect("read Questions")
        .expect("a Questions row");
    let value: String = row.try_get_by_index(1).expect("its value");
    value.parse().expect("a count")
}

/// The number of rows of `entity`'s table.
pub async fn count<E: sea_orm::EntityTrait>(fx: &Fixture, entity: E) -> u64 {
    let _ = entity;
    E::find().all(&fx.db).await.expect("rows").len() as u64
}
