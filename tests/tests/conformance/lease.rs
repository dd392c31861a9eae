//! The lease's end is typed, and the lease never widens a tighter timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hierlock::sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
use hierlock::{Error, ErrorKind, RetryPolicy, Target, Wait, retry};
use hierlock_tests::{Backend, Fixture, bounded};

const LEASE: Duration = Duration::from_secs(2);

/// Long enough past the lease for the server to have ended the session:
/// MySQL-family timeouts are whole seconds, checked by the server's timer.
const PAST_THE_LEASE: Duration = Duration::from_millis(3500);

/// A lock-holding transaction idle past its lease is ended by the server:
/// its next statement is `ConnectionLost`, retryable, its lock is free, and
/// `hierlock::retry` runs the work again, which completes on attempt 2.
pub async fn a_transaction_past_its_lease_is_connection_lost_and_retried(backend: Backend) {
    let fx = Fixture::new(backend, "leaseend", 1000).await;
    let (db, locker) = fx.leased(LEASE).await;
    let r = Target::resource("u1", "a1", "r1").write();

    let txn = db.begin().await.expect("begin");
    locker
        .acquire(&txn, [r.clone()])
        .await
        .expect("uncontended");
    tokio::time::sleep(PAST_THE_LEASE).await;
    let ended = bounded(
        "a statement past the lease",
        txn.execute_unprepared("SELECT 1"),
    )
    .await
    .expect_err("the server ended the transaction at its lease");
    let err = Error::from(ended);
    eprintln!("{backend:?}: a statement past the lease: {err}");
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert!(err.is_retryable(), "{err}");
    let other = fx.begin().await;
    locker
        .acquire_with(&other, [r.clone()], Wait::NoWait)
        .await
        .expect("the ended transaction's lock is free");
    other.rollback().await.expect("rollback");

    let attempts = AtomicUsize::new(0);
    let policy = RetryPolicy::default();
    let outcome = bounded(
        "the retried work",
        retry(&db, &policy, async |txn| {
            let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            locker.acquire(txn, [r.clone()]).await?;
            if attempt == 1 {
                tokio::time::sleep(PAST_THE_LEASE).await;
            }
            txn.execute_unprepared("SELECT 1").await?;
            Ok::<_, Error>(attempt)
        }),
    )
    .await;
    assert_eq!(outcome.expect("the second attempt completes"), 2);
}

/// PostgreSQL: the lease never widens a tighter
/// `idle_in_transaction_session_timeout` (set for the session, as a role's
/// or database's default is, or for the transaction), and replaces `0`
/// (off) and a looser one.
pub async fn the_lease_keeps_a_tighter_timeout(backend: Backend) {
    let fx = Fixture::new(backend, "leasetight", 1000).await;
    let db = fx.another_pool(1).await;
    let config = fx
        .config
        .clone()
        .with_lease(Duration::from_secs(7))
        .expect("a lease");
    let locker = hierlock::Locker::connect(&db, config)
        .await
        .expect("locker");
    let r = Target::resource("u1", "a1", "r1").write();
    for (scope, before, after) in [
        ("SESSION", "1500ms", "1500ms"),
        ("LOCAL", "3s", "3s"),
        ("LOCAL", "0", "7s"),
        ("SESSION", "1h", "7s"),
        ("LOCAL", "7s", "7s"),
    ] {
        let txn = db.begin().await.expect("begin");
        let set = format!("SET {scope} idle_in_transaction_session_timeout = '{before}'");
        txn.execute_unprepared(&set).await.expect("set");
        for wait in [Wait::Block, Wait::Timeout(Duration::from_secs(1))] {
            bounded(
                "an acquisition",
                locker.acquire_with(&txn, [r.clone()], wait),
            )
            .await
            .expect("uncontended");
            let v = idle_in_transaction_timeout(&txn).await;
            assert_eq!(v, after, "{set}, then an acquisition ({wait:?})");
        }
        txn.rollback().await.expect("rollback");
    }
    // The session setting is the connection's own: put it back.
    db.execute_unprepared("RESET idle_in_transaction_session_timeout")
        .await
        .expect("reset");
}

/// PostgreSQL: an acquisition that had to wait holds its lease too, set
/// by its first try for the rest of the transaction (the statement that
/// waits does not set it again), whatever the transaction's timeout was,
/// with and without a deadline.
pub async fn an_acquisition_that_waited_holds_its_lease(backend: Backend) {
    let fx = Fixture::new(backend, "leasewait", 1000).await;
    let (db, locker) = fx.leased(Duration::from_secs(7)).await;
    let r = Target::resource("u1", "a1", "r1").write();
    for wait in [Wait::Block, Wait::Timeout(Duration::from_secs(30))] {
        let holder = fx.begin().await;
        fx.locker
            .acquire(&holder, [r.clone()])
            .await
            .expect("the holder's lock");
        let txn = db.begin().await.expect("begin");
        txn.execute_unprepared("SET LOCAL idle_in_transaction_session_timeout = 0")
            .await
            .expect("set");
        let started = std::time::Instant::now();
        let (acquired, ()) = tokio::join!(
            bounded(
                "a waiting acquisition",
                locker.acquire_with(&txn, [r.clone()], wait)
            ),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                holder.commit().await.expect("the holder commits");
            }
        );
        acquired.expect("granted once the holder committed");
        assert!(
            started.elapsed() >= Duration::from_millis(250),
            "the acquisition waited ({wait:?})"
        );
        assert_eq!(idle_in_transaction_timeout(&txn).await, "7s", "{wait:?}");
        txn.rollback().await.expect("rollback");
    }
}

/// The longest lease `Config` accepts is one PostgreSQL holds (its setting
/// is an `int` of milliseconds): acquisitions with it work; a 30-day lease
/// is refused by `Config` before any server sees it.
pub async fn the_longest_lease_works_and_a_longer_one_is_refused(backend: Backend) {
    let fx = Fixture::new(backend, "leaselong", 1000).await;
    let thirty_days = Duration::from_secs(30 * 24 * 3600);
    let err = fx
        .config
        .clone()
        .with_lease(thirty_days)
        .expect_err("too long");
    assert_eq!(err.kind(), ErrorKind::InvalidConfig, "{err}");
    let (db, locker) = fx.leased(hierlock::MAX_LEASE).await;
    let txn = db.begin().await.expect("begin");
    bounded(
        "an acquisition with the longest lease",
        locker.acquire(&txn, [Target::resource("u1", "a1", "r1").write()]),
    )
    .await
    .expect("the server takes the longest lease");
    txn.commit().await.expect("commit");
}

/// PostgreSQL's `idle_in_transaction_session_timeout` as `txn` sees it.
pub async fn idle_in_transaction_timeout(txn: &hierlock::sea_orm::DatabaseTransaction) -> String {
    let show = Statement::from_string(
        DbBackend::Postgres,
        "SELECT current_setting('idle_in_transaction_session_timeout') AS v",
    );
    let row = txn.query_one_raw(show).await.expect("show").expect("a row");
    row.try_get("", "v").expect("text")
}
