//! Every failure is a typed error, and leaves the caller's transaction in the
//! documented state.

use std::time::Duration;

use hierlock::{ErrorKind, Level, Locker, Target, TxnState, Wait};
use hierlock_tests::{Backend, Fixture, bounded};
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, Statement};

use crate::support::{holding, take};

pub(crate) async fn query_i64(txn: &DatabaseTransaction, sql: &str) -> i64 {
    let row = txn
        .query_one_raw(Statement::from_string(txn.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("one row");
    // PostgreSQL answers `SELECT 1` with an int4.
    row.try_get_by_index::<i64>(0)
        .or_else(|_| row.try_get_by_index::<i32>(0).map(i64::from))
        .expect("an integer")
}

async fn query_text(txn: &DatabaseTransaction, sql: &str) -> String {
    let row = txn
        .query_one_raw(Statement::from_string(txn.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("one row");
    row.try_get_by_index(0).expect("text")
}

/// The connection's own lock-wait setting, as text.
async fn wait_setting(backend: Backend, txn: &DatabaseTransaction) -> String {
    match backend {
        Backend::MariaDb | Backend::MySql => query_i64(
            txn,
            "SELECT CAST(@@SESSION.innodb_lock_wait_timeout AS SIGNED)",
        )
        .await
        .to_string(),
        Backend::Postgres | Backend::PostgresBuckets => {
            query_text(txn, "SELECT current_setting('lock_timeout')").await
        }
        Backend::Sqlite | Backend::SqliteWithoutHandler => {
            query_i64(txn, "PRAGMA busy_timeout").await.to_string()
        }
    }
}

pub async fn empty_ids_fail_before_any_sql(backend: Backend) {
    let fx = Fixture::new(backend, "empty", 1000).await;
    let txn = fx.begin().await;
    for bad in [
        Target::user(""),
        Target::account("u1", ""),
        Target::resource("u1", "a1", ""),
    ] {
        let err = take(&fx, &txn, &[bad.write()], Wait::Block)
            .await
            .expect_err("empty id");
        assert_eq!(err.kind(), ErrorKind::EmptyId);
        assert_eq!(err.txn_state(), TxnState::Unchanged);
        assert!(!err.is_retryable());
    }
    // Nothing reached the server: on PostgreSQL a failed statement would have
    // aborted the transaction.
    assert_eq!(query_i64(&txn, "SELECT 1").await, 1);
    txn.rollback().await.expect("rollback");
}

pub async fn nowait_conflict_is_would_block(backend: Backend) {
    let fx = Fixture::new(backend, "nowait", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _t1 = holding(&fx, std::slice::from_ref(&r)).await;
    let t2 = fx.begin().await;
    let err = bounded("no-wait", take(&fx, &t2, &[r], Wait::NoWait))
        .await
        .expect_err("conflict");
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
    assert!(err.is_retryable());
    let expected = match backend {
        // The shared user/account statement succeeded before the resource failed.
        Backend::MariaDb | Backend::MySql => TxnState::PartiallyLocked,
        // The attempt ran in a savepoint that was rolled back; SQLite took nothing.
        _ => TxnState::Unchanged,
    };
    assert_eq!(err.txn_state(), expected);
    assert!(err.to_string().contains("Resource(u1/a1/r1)"), "{err}");
}

pub async fn timeout_conflict_is_lock_timeout_and_restores_the_setting(backend: Backend) {
    let fx = Fixture::new(backend, "timeout", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let t1 = holding(&fx, std::slice::from_ref(&r)).await;
    let t2 = fx.begin().await;
    let before = wait_setting(backend, &t2).await;
    let timeout = Duration::from_millis(300);
    let err = bounded(
        "timeout",
        take(&fx, &t2, std::slice::from_ref(&r), Wait::Timeout(timeout)),
    )
    .await
    .expect_err("conflict");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(err.is_retryable());
    assert!(matches!(err, hierlock::Error::LockTimeout { waited: Some(d), .. } if d == timeout));
    if let Some(server_error) =
        std::error::Error::source(&err).and_then(|e| e.downcast_ref::<sea_orm::DbErr>())
    {
        assert_eq!(
            hierlock::conflict_kind(server_error),
            Some(ErrorKind::LockTimeout)
        );
    }
    assert_eq!(
        wait_setting(backend, &t2).await,
        before,
        "the connection's own setting is restored"
    );
    // A later blocking acquisition on the same transaction waits as before.
    t1.rollback().await.expect("rollback");
    bounded("after release", take(&fx, &t2, &[r], Wait::Block))
        .await
        .expect("granted");
}

pub async fn out_of_range_timeouts_are_misuse_and_long_ones_work(backend: Backend) {
    let fx = Fixture::new(backend, "zero", 1000).await;
    let txn = fx.begin().await;
    let user = [Target::user("u").write()];
    let too_long = hierlock::MAX_TIMEOUT + Duration::from_secs(1);
    for wait in [Wait::Timeout(Duration::ZERO), Wait::Timeout(too_long)] {
        let err = take(&fx, &txn, &user, wait)
            .await
            .expect_err("out of range");
        assert_eq!(err.kind(), ErrorKind::Misuse, "{wait:?}: {err}");
        assert_eq!(err.txn_state(), hierlock::TxnState::Unchanged);
        let err = hierlock::Config::default()
            .with_wait(wait)
            .expect_err("out of range in a Config");
        assert_eq!(err.kind(), ErrorKind::Misuse, "{wait:?}: {err}");
    }
    // Longer than PostgreSQL's `lock_timeout` can hold (about 24.8 days):
    // the deadline is hierlock's, so it works on every server.
    let month = Wait::Timeout(Duration::from_secs(30 * 24 * 3600));
    take(&fx, &txn, &user, month)
        .await
        .expect("a 30-day timeout, uncontended");
}

/// Blocking still ends when the server's own lock-wait timeout runs out.
pub async fn server_lock_wait_timeout_while_blocking_is_lock_timeout(backend: Backend) {
    let fx = Fixture::new(backend, "servertimeout", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _t1 = holding(&fx, std::slice::from_ref(&r)).await;
    let t2 = fx.begin().await;
    let set = match t2.get_database_backend() {
        DbBackend::MySql => "SET SESSION innodb_lock_wait_timeout = 1",
        _ => "SET LOCAL lock_timeout = '300ms'",
    };
    t2.execute_raw(Statement::from_string(t2.get_database_backend(), set))
        .await
        .expect("set");
    let err = bounded("blocking", take(&fx, &t2, &[r], Wait::Block))
        .await
        .expect_err("server timeout");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(matches!(
        err,
        hierlock::Error::LockTimeout { waited: None, .. }
    ));
    let expected = match backend {
        Backend::MariaDb | Backend::MySql => TxnState::PartiallyLocked,
        _ => TxnState::Aborted, // no savepoint around a blocking attempt
    };
    assert_eq!(err.txn_state(), expected);
    if t2.get_database_backend() == DbBackend::MySql {
        t2.execute_raw(Statement::from_string(
            DbBackend::MySql,
            "SET SESSION innodb_lock_wait_timeout = DEFAULT",
        ))
        .await
        .expect("reset");
    }
}

/// MySQL and MariaDB keep the locks of the statements that succeeded: after a
/// failure the transaction still holds part of the plan, as documented.
pub async fn partial_lock_set_after_a_mysql_failure_stays_held(backend: Backend) {
    let fx = Fixture::new(backend, "partial", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let t1 = holding(&fx, std::slice::from_ref(&r)).await;
    let t2 = fx.begin().await;
    let err = take(&fx, &t2, &[r], Wait::NoWait)
        .await
        .expect_err("conflict");
    assert_eq!(err.txn_state(), TxnState::PartiallyLocked);
    t1.rollback().await.expect("rollback");
    // t2 still holds its shared account lock, so the account cannot be written …
    let account = Target::account("u1", "a1").write();
    let t3 = fx.begin().await;
    let held = take(&fx, &t3, std::slice::from_ref(&account), Wait::NoWait)
        .await
        .expect_err("t2's partial locks");
    assert_eq!(held.kind(), ErrorKind::WouldBlock);
    drop(t3);
    // … until t2 rolls back, as the error tells the caller to.
    t2.rollback().await.expect("rollback");
    let t4 = fx.begin().await;
    take(&fx, &t4, &[account], Wait::NoWait)
        .await
        .expect("free after rollback");
}

/// PostgreSQL: a failed no-wait attempt runs in a savepoint, so the caller's
/// transaction is neither aborted nor left holding part of the attempt.
pub async fn postgres_failure_leaves_the_transaction_usable(backend: Backend) {
    let fx = Fixture::new(backend, "pgusable", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _t1 = holding(&fx, std::slice::from_ref(&r)).await;
    let t2 = holding(&fx, &[Target::user("u8").write()]).await;
    let err = take(&fx, &t2, &[Target::user("u7").write(), r], Wait::NoWait)
        .await
        .expect_err("conflict");
    assert_eq!(err.txn_state(), TxnState::Unchanged);
    assert_eq!(query_i64(&t2, "SELECT 1").await, 1, "not aborted");
    let t3 = fx.begin().await;
    take(&fx, &t3, &[Target::user("u7").write()], Wait::NoWait)
        .await
        .expect("the attempt's locks were released");
    let still = take(&fx, &t3, &[Target::user("u8").write()], Wait::NoWait)
        .await
        .expect_err("earlier lock kept");
    assert_eq!(still.kind(), ErrorKind::WouldBlock);
}

pub async fn missing_bucket_row_is_not_provisioned(backend: Backend) {
    let fx = Fixture::new(backend, "missing", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let plan = fx.locker.plan([&r]).expect("plan");
    // The account's row: the second row of the shared (user, account) statement.
    let lock = plan.locks()[1];
    assert_eq!(lock.key.level, Level::Account);
    fx.exec(&format!(
        "DELETE FROM {} WHERE level = 1 AND bucket = {}",
        fx.config.table(),
        lock.key.slot
    ))
    .await;
    let txn = fx.begin().await;
    let err = take(&fx, &txn, &[r], Wait::Block)
        .await
        .expect_err("missing row");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
    let slot = u32::try_from(lock.key.slot).expect("bucket");
    assert!(
        matches!(err, hierlock::Error::NotProvisioned { row: Some((Level::Account, b)), .. } if b == slot),
        "the missing row is named: {err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("level 1 = account, bucket {slot}")),
        "{err}"
    );
    assert_eq!(
        err.txn_state(),
        TxnState::PartiallyLocked,
        "the user's row was locked"
    );
}

pub async fn mismatched_or_missing_table_is_refused(backend: Backend) {
    let fx = Fixture::new(backend, "meta", 1000).await;
    let other_space = fx.config.clone().with_bucket_space(999).expect("config");
    let err = Locker::connect(&fx.db, other_space)
        .await
        .expect_err("mismatch");
    assert_eq!(err.kind(), ErrorKind::ConfigMismatch, "{err}");
    assert!(
        err.to_string().contains("1000") && err.to_string().contains("999"),
        "{err}"
    );

    let missing = fx
        .config
        .clone()
        .with_table("hl_no_such_table")
        .expect("config");
    let err = Locker::connect(&fx.db, missing).await.expect_err("missing");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");

    fx.exec(&format!(
        "UPDATE {} SET complete = 0",
        fx.config.table().meta()
    ))
    .await;
    let err = Locker::connect(&fx.db, fx.config.clone())
        .await
        .expect_err("incomplete");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
}

/// A transaction of another kind of database than the locker's is refused
/// before any SQL.
pub async fn transaction_of_another_database_is_misuse(backend: Backend) {
    let fx = Fixture::new(backend, "misuse", 1000).await;
    let other = sea_orm::Database::connect("sqlite::memory:")
        .await
        .expect("sqlite");
    let txn = sea_orm::TransactionTrait::begin(&other)
        .await
        .expect("begin");
    let err = take(&fx, &txn, &[Target::user("u").write()], Wait::Block)
        .await
        .expect_err("misuse");
    assert_eq!(err.kind(), ErrorKind::Misuse, "{err}");
    assert_eq!(err.txn_state(), TxnState::Unchanged);
}

/// A bucket table dropped after `Locker::connect` is `NotProvisioned`, not
/// an opaque database error.
pub async fn dropped_table_is_not_provisioned(backend: Backend) {
    let fx = Fixture::new(backend, "dropped", 1000).await;
    fx.exec(&format!("DROP TABLE {}", fx.config.table())).await;
    let txn = fx.begin().await;
    let err = take(&fx, &txn, &[Target::user("u").write()], Wait::Block)
        .await
        .expect_err("no table");
    assert_eq!(err.kind(), ErrorKind::NotProvisioned, "{err}");
}

/// Any other server failure is `Database`, with the server's error as its
/// source: here, PostgreSQL refusing statements in an aborted transaction.
pub async fn other_server_errors_are_database_errors(backend: Backend) {
    let fx = Fixture::new(backend, "dberror", 1000).await;
    let txn = fx.begin().await;
    txn.execute_raw(Statement::from_string(DbBackend::Postgres, "SELECT 1/0"))
        .await
        .expect_err("division by zero");
    let err = take(&fx, &txn, &[Target::user("u").write()], Wait::Block)
        .await
        .expect_err("aborted txn");
    assert_eq!(err.kind(), ErrorKind::Database, "{err}");
    assert!(!err.is_retryable());
    assert!(
        std::error::Error::source(&err).is_some(),
        "the server's error is the source"
    );
    // The message names what hierlock did and carries the server's words.
    let message = err.to_string();
    assert!(
        message.starts_with("database error while acquiring write User(u): "),
        "{message}"
    );
    assert!(
        message.contains("current transaction is aborted"),
        "the server's words: {message}"
    );
}

/// PostgreSQL: the server's bound is the deadline of the statement's waits
/// together, not of each. A plan that waits for one key, gets it, then
/// waits for another is ended by the server at the deadline (55P03, the
/// error's source), before hierlock's cancellation, which comes a little
/// later and leaves no server error.
pub async fn postgres_server_bound_ends_a_second_wait_at_the_deadline(backend: Backend) {
    let fx = Fixture::new(backend, "bound_sum", 1000).await;
    // Every user key comes before every account key in the plan, and both
    // are shared (one statement on the bucket table too): the acquisition
    // waits for `u1`, then for `a2`.
    let second_holder = holding(&fx, &[Target::account("u2", "a2").write()]).await;
    let first_holder = holding(&fx, &[Target::user("u1").write()]).await;
    let wanted = [
        Target::resource("u1", "a1", "r1").write(),
        Target::resource("u2", "a2", "r2").write(),
    ];
    let txn = fx.begin().await;
    let (taken, ()) = tokio::join!(
        bounded(
            "two waits in turn",
            take(
                &fx,
                &txn,
                &wanted,
                Wait::Timeout(Duration::from_millis(800))
            ),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            first_holder.rollback().await.expect("rollback");
        }
    );
    let err = taken.expect_err("a2 stays held");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    let source = std::error::Error::source(&err)
        .unwrap_or_else(|| panic!("ended by hierlock's cancellation, not the server: {err}"));
    assert!(source.to_string().contains("lock timeout"), "{source}");
    drop(txn);
    second_holder.rollback().await.expect("rollback");
}

/// PostgreSQL's timed advisory-lock statement bounds its own wait with
/// `lock_timeout` (the time left): the caller's value is back after a
/// granted wait and after a timed-out one, a tighter value of the caller's
/// ends the wait first, and a wait longer than `lock_timeout` can hold is
/// left to hierlock's deadline.
pub async fn postgres_server_bound_keeps_the_callers_lock_timeout(backend: Backend) {
    let fx = Fixture::new(backend, "bound", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let set = async |txn: &DatabaseTransaction, value: &str| {
        txn.execute_unprepared(&format!("SET LOCAL lock_timeout = '{value}'"))
            .await
            .expect("SET LOCAL lock_timeout");
    };
    // Granted before the deadline: the holder ends after 200 ms. Past the
    // largest `lock_timeout`, with the server's default (off), there is no
    // bound to set.
    for (wait, caller) in [
        (Wait::Timeout(Duration::from_secs(5)), "7s"),
        (Wait::Timeout(Duration::from_secs(30 * 24 * 3600)), "0"),
    ] {
        let holder = holding(&fx, std::slice::from_ref(&r)).await;
        let txn = fx.begin().await;
        set(&txn, caller).await;
        let (granted, ()) = tokio::join!(
            bounded("granted", take(&fx, &txn, std::slice::from_ref(&r), wait)),
            async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                holder.rollback().await.expect("rollback");
            }
        );
        granted.unwrap_or_else(|e| panic!("{wait:?}: granted once the holder ends: {e}"));
        assert_eq!(wait_setting(backend, &txn).await, caller, "{wait:?}");
        txn.commit().await.expect("commit");
    }
    // Timed out: the caller's value is back too.
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let txn = fx.begin().await;
    set(&txn, "7s").await;
    let err = bounded(
        "timeout",
        take(
            &fx,
            &txn,
            std::slice::from_ref(&r),
            Wait::Timeout(Duration::from_millis(300)),
        ),
    )
    .await
    .expect_err("held");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert_eq!(wait_setting(backend, &txn).await, "7s");
    drop(txn);
    // A tighter value of the caller's ends the wait first.
    let txn = fx.begin().await;
    set(&txn, "100ms").await;
    let started = std::time::Instant::now();
    let err = bounded(
        "tighter",
        take(
            &fx,
            &txn,
            std::slice::from_ref(&r),
            Wait::Timeout(Duration::from_secs(5)),
        ),
    )
    .await
    .expect_err("held");
    let waited = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(waited < Duration::from_secs(2), "waited {waited:?}");
    assert_eq!(wait_setting(backend, &txn).await, "100ms");
    drop(txn);
    holder.rollback().await.expect("rollback");
}
