//! The SQL sent: how many statements, and exactly which rows they lock.

use hierlock::{Level, Target, Wait};
use hierlock_tests::{Backend, Fixture};
use sea_orm::{ConnectionTrait, IsolationLevel, Statement, TransactionTrait};

use crate::support::{holding, take};

pub async fn statements_per_resource_write_lock(backend: Backend) {
    let fx = Fixture::new(backend, "stmts", 1000).await;
    let txn = fx.begin().await;
    let statements = take(
        &fx,
        &txn,
        &[Target::resource("u1", "a1", "r1").write()],
        Wait::Block,
    )
    .await
    .expect("lock");
    let expected = match backend {
        // The MySQL family: one UNION with a lock clause per row, tried
        // without waiting first (uncontended, that is all); PostgreSQL's
        // bucket table: its runs of equal modes, shared (user, account)
        // then exclusive (resource), one after another in one statement;
        // one advisory statement for the whole plan; one write on SQLite.
        Backend::MariaDb
        | Backend::MySql
        | Backend::PostgresBuckets
        | Backend::Postgres
        | Backend::Sqlite
        | Backend::SqliteWithoutHandler => 1,
    };
    assert_eq!(statements, expected);
    // Ten resources of one account are still one statement.
    let many: Vec<_> = (0..10)
        .map(|i| Target::resource("u2", "a2", i).write())
        .collect();
    let statements = take(&fx, &txn, &many, Wait::Block).await.expect("lock");
    assert_eq!(statements, expected);
}

/// On a six-row table, under REPEATABLE READ and READ COMMITTED, a multi-row
/// lock statement must lock the planned rows and no others (MariaDB was seen
/// locking the whole table with a plain IN list).
pub async fn multi_row_statements_lock_only_the_planned_rows(backend: Backend) {
    let fx = Fixture::new(backend, "overlock", 2).await;
    let table = fx.config.table().to_string();
    let db_backend = fx.db.get_database_backend();
    for isolation in [
        IsolationLevel::RepeatableRead,
        IsolationLevel::ReadCommitted,
    ] {
        for requests in [
            vec![Target::resource("u", "a", "r").read()],
            vec![
                Target::resource("u", "a", "r1").write(),
                Target::resource("u", "a", "r2").write(),
            ],
            vec![Target::account("u", "a").write()],
        ] {
            let plan = fx.locker.plan(&requests).expect("plan");
            let holder = fx
                .db
                .begin_with_config(Some(isolation), None)
                .await
                .expect("begin");
            take(&fx, &holder, &requests, Wait::Block)
                .await
                .expect("lock");
            for level in Level::ALL {
                for bucket in 0..2_i64 {
                    let planned = plan
                        .locks()
                        .iter()
                        .any(|l| l.key.level == level && l.key.slot == bucket);
                    let probe = fx.db.begin().await.expect("begin");
                    let sql = format!(
                        "SELECT bucket FROM {table} WHERE level = {} AND bucket = {bucket} FOR UPDATE NOWAIT",
                        level.as_u8()
                    );
                    let locked = probe
                        .query_all_raw(Statement::from_string(db_backend, sql))
                        .await
                        .is_err();
                    assert_eq!(
                        locked, planned,
                        "{isolation:?}, {requests:?}: row ({level}, {bucket}) locked = {locked}, planned = {planned}"
                    );
                    probe.rollback().await.ok();
                }
            }
            holder.rollback().await.expect("rollback");
        }
    }
}

/// Locks are taken in key order whatever the input order: while a request
/// for `[higher, lower]` waits for `higher` (held elsewhere), `lower` is
/// already locked — it was taken first. Deterministic, unlike stress.
pub async fn locks_are_taken_in_key_order_whatever_the_input_order(backend: Backend) {
    use hierlock::ErrorKind;
    use hierlock_tests::bounded;

    let fx = Fixture::new(backend, "keyorder", 1000).await;
    let key = |r: &Target| {
        let request = r.clone().write();
        fx.locker
            .plan([&request])
            .expect("plan")
            .locks()
            .last()
            .expect("lock")
            .key
    };
    let (mut lower, mut higher) = (
        Target::resource("u", "a", "p"),
        Target::resource("u", "a", "q"),
    );
    assert_ne!(key(&lower), key(&higher), "two distinct keys");
    if key(&lower) > key(&higher) {
        std::mem::swap(&mut lower, &mut higher);
    }
    let holder = holding(&fx, &[higher.clone().write()]).await;

    let waiter_txn = fx.begin().await;
    let id = fx.connection_id(&waiter_txn).await;
    let locker = fx.locker.clone();
    let reversed = vec![higher.clone().write(), lower.clone().write()];
    let waiter = tokio::spawn(async move {
        (
            locker.acquire(&waiter_txn, reversed).await.map(|_| ()),
            waiter_txn,
        )
    });
    fx.wait_until_blocked(id).await;
    let probe = fx.begin().await;
    let err = take(&fx, &probe, &[lower.write()], Wait::NoWait)
        .await
        .expect_err("lower is taken first");
    assert_eq!(err.kind(), ErrorKind::WouldBlock);
    drop(probe);
    holder.rollback().await.expect("rollback");
    let (outcome, txn) = bounded("the waiter", waiter).await.expect("task");
    outcome.expect("granted");
    txn.rollback().await.expect("rollback");
}

/// The largest acquisition allowed (`MAX_LOCKS_PER_CALL` locks) works: one
/// statement for its two runs of equal modes on the MySQL family, one per
/// run on PostgreSQL's bucket table, advisory keys split into statements of
/// `max_rows_per_statement` (3,000 of them: PostgreSQL's shared lock table is
/// smaller). `scale` checks which rows it locks.
pub async fn the_largest_acquisition_works(backend: Backend) {
    use hierlock::{Dialect, MAX_LOCKS_PER_CALL};

    let fx = Fixture::new(backend, "largest", 20_000).await;
    // Advisory locks take entries of PostgreSQL's shared lock table, about
    // 6,400 by default for the whole server (README, Limits): stay below.
    let resources = if backend == Backend::Postgres {
        3_000
    } else {
        MAX_LOCKS_PER_CALL - 2
    };
    let requests: Vec<_> = (0..resources)
        .map(|i| Target::resource("u", "a", i).write())
        .collect();
    let plan = fx.locker.plan(&requests).expect("plan at the limit");
    let chunk = fx.locker.dialect().max_rows_per_statement();
    let expected = match fx.locker.dialect() {
        Dialect::Sqlite => 1,
        // Mixed modes in one statement, uncontended: no second attempt.
        // The bucket table's runs one after another in one statement.
        Dialect::MySql | Dialect::MariaDb => 1,
        Dialect::Postgres if backend == Backend::Postgres => plan.locks().len().div_ceil(chunk),
        _ => 1,
    };
    let txn = fx.begin().await;
    let statements = hierlock_tests::bounded(
        "the largest acquisition",
        take(&fx, &txn, &requests, Wait::Block),
    )
    .await
    .expect("granted");
    assert_eq!(statements, expected);
    txn.rollback().await.expect("rollback");
}
