//! Faults on real servers: connections killed from the server side, the
//! retry helper, and a lock handle outliving its runtime.

use std::sync::atomic::{AtomicU32, Ordering};

use hierlock::{Error, ErrorKind, RetryPolicy, Target, TxnState, Wait, retry};
use hierlock_tests::{Backend, Fixture, Proxy, bounded};
use sea_orm::DatabaseTransaction;

use crate::support::{assert_free, holding, take};

/// End connection `id` from the server side, as an operator's `KILL` or a
/// failover would.
async fn kill(fx: &Fixture, id: i64) {
    match fx.backend {
        Backend::MariaDb | Backend::MySql => fx.exec(&format!("KILL {id}")).await,
        Backend::Postgres | Backend::PostgresBuckets => {
            fx.exec(&format!("SELECT pg_terminate_backend({id})")).await;
        }
        Backend::Sqlite | Backend::SqliteWithoutHandler => {
            unreachable!("SQLite has no server connection to kill")
        }
    }
}

fn assert_lost(err: &Error) {
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(err.txn_state(), TxnState::Lost, "{err}");
}

pub async fn a_killed_holder_is_connection_lost_and_its_locks_go_with_it(backend: Backend) {
    let fx = Fixture::new(backend, "killholder", 1000).await;
    let r1 = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r1)).await;
    let id = fx.connection_id(&holder).await;
    kill(&fx, id).await;
    let r2 = Target::resource("u1", "a1", "r2").write();
    let err = bounded(
        "an acquisition on a killed connection",
        take(&fx, &holder, &[r2], Wait::Block),
    )
    .await
    .expect_err("the holder's connection is gone");
    assert_lost(&err);
    drop(holder);
    assert_free(&fx, "the killed holder's locks", &r1).await;
}

pub async fn a_cut_network_is_connection_lost_and_the_locks_go_with_it(backend: Backend) {
    let fx = Fixture::new(backend, "cutnet", 1000).await;
    let proxy = Proxy::start(fx.server_addr()).await;
    let (db, locker) = fx.through(&proxy).await;
    let r1 = Target::resource("u1", "a1", "r1").write();
    let txn = sea_orm::TransactionTrait::begin(&db).await.expect("begin");
    locker
        .acquire(&txn, [r1.clone()])
        .await
        .expect("uncontended");
    proxy.cut();
    let err = bounded(
        "an acquisition on a cut connection",
        locker.acquire(&txn, [Target::resource("u1", "a1", "r2").write()]),
    )
    .await
    .expect_err("the connection is cut");
    assert_lost(&err);
    drop(txn);
    // The server saw the connection close and released its locks.
    assert_free(&fx, "the cut connection's locks", &r1).await;
    // The pool behind the proxy recovers with new connections.
    let txn = sea_orm::TransactionTrait::begin(&db)
        .await
        .expect("a new connection");
    bounded(
        "an acquisition on a new connection",
        locker.acquire(&txn, [r1]),
    )
    .await
    .expect("granted");
}

pub async fn a_waiter_killed_while_waiting_is_connection_lost(backend: Backend) {
    let fx = Fixture::new(backend, "killwaiter", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let waiter = fx.begin().await;
    let id = fx.connection_id(&waiter).await;
    let (outcome, ()) = tokio::join!(
        bounded(
            "the killed waiter's acquisition",
            take(&fx, &waiter, std::slice::from_ref(&r), Wait::Block)
        ),
        async {
            fx.wait_until_blocked(id).await;
            kill(&fx, id).await;
        }
    );
    assert_lost(&outcome.expect_err("the waiter's connection is gone"));
    drop(holder);
}

/// The work of one attempt: lock `r1`; on the first attempt, have the
/// connection killed before locking `r2`.
async fn lock_two_killing_the_first_attempt(
    fx: &Fixture,
    attempts: &AtomicU32,
    txn: &DatabaseTransaction,
) -> hierlock::Result<u32> {
    let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
    fx.locker
        .acquire(txn, [Target::resource("u1", "a1", "r1").write()])
        .await?;
    if attempt == 1 {
        let id = fx.connection_id(txn).await;
        kill(fx, id).await;
    }
    fx.locker
        .acquire(txn, [Target::resource("u1", "a1", "r2").write()])
        .await?;
    Ok(attempt)
}

pub async fn retry_runs_again_after_a_killed_connection(backend: Backend) {
    let fx = Fixture::new(backend, "retrykill", 1000).await;
    let attempts = AtomicU32::new(0);
    let policy = RetryPolicy::default();
    let done = bounded(
        "retry",
        retry(&fx.db, &policy, async |txn| {
            lock_two_killing_the_first_attempt(&fx, &attempts, txn).await
        }),
    )
    .await
    .expect("the second attempt succeeds on a new connection");
    assert_eq!(done, 2, "one retry after the killed connection");
    // A policy of one attempt gives the failure back.
    attempts.store(0, Ordering::SeqCst);
    let once = RetryPolicy::default().with_max_attempts(1);
    let err = bounded(
        "retry once",
        retry(&fx.db, &once, async |txn| {
            lock_two_killing_the_first_attempt(&fx, &attempts, txn).await
        }),
    )
    .await
    .expect_err("no second attempt");
    assert_lost(&err);
}

pub async fn retry_runs_again_after_a_deadlock(backend: Backend) {
    let fx = Fixture::new(backend, "retrydeadlock", 1000).await;
    let a = Target::account("u1", "a1").write();
    let b = Target::account("u2", "a2").write();
    let attempts = AtomicU32::new(0);
    let barrier = tokio::sync::Barrier::new(2);
    // Two separate calls per transaction, in opposite orders: the classic
    // deadlock that one call per transaction avoids. The first attempts meet
    // at the barrier so that each holds its first lock.
    let run = |first: hierlock::Request, second: hierlock::Request| {
        let (fx, attempts, barrier) = (&fx, &attempts, &barrier);
        async move {
            retry(&fx.db, &RetryPolicy::default(), async |txn| {
                let attempt = attempts.fetch_add(1, Ordering::SeqCst);
                fx.locker.acquire(txn, [first.clone()]).await?;
                if attempt < 2 {
                    barrier.wait().await;
                }
                fx.locker.acquire(txn, [second.clone()]).await?;
                Ok::<_, Error>(())
            })
            .await
        }
    };
    let (x, y) = bounded(
        "two retried transactions",
        futures::future::join(run(a.clone(), b.clone()), run(b, a)),
    )
    .await;
    x.expect("the first transaction commits, retried if it was the victim");
    y.expect("the second transaction commits, retried if it was the victim");
    assert!(
        attempts.load(Ordering::SeqCst) >= 3,
        "the deadlock victim ran again"
    );
}

/// A handle that outlives the runtime it was made on drops without a panic,
/// and the server releases its locks.
pub fn a_handle_dropped_after_its_runtime_does_not_panic(backend: Backend) {
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let r = Target::resource("u1", "a1", "r1").write();
    let first = runtime();
    let (fx, handle) = first.block_on(async {
        let fx = Fixture::new(backend, "handleshutdown", 1000).await;
        let handle = fx
            .locker
            .acquire_handle(&fx.db, [r.clone()])
            .await
            .expect("handle");
        (fx, handle)
    });
    drop(first);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(handle)));
    assert!(dropped.is_ok(), "dropping the handle panicked");
    let config = fx.config.clone();
    std::mem::forget(fx); // its pool belongs to the runtime that is gone
    runtime().block_on(async {
        let fx = Fixture::reconnect(backend, "handleshutdown", config).await;
        assert_free(&fx, "the dropped handle's locks", &r).await;
    });
}
