//! A silent network (the proxy stops forwarding without closing anything):
//! every call with a deadline ends by it with a lost connection, and the
//! server frees a silent client's locks within the lease.

use std::time::{Duration, Instant};

use hierlock::sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use hierlock::{DEADLINE_MARGIN, Error, ErrorKind, RetryPolicy, Target, TxnState, Wait, retry};
use hierlock_tests::{Backend, Fixture, Proxy, bounded};

use crate::support::take;

/// How late past its bound a call may return on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(400);

fn assert_abandoned(err: &Error, state: TxnState) {
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    assert_eq!(err.txn_state(), state, "{err}");
    assert_eq!(err.is_retryable(), state == TxnState::Lost, "{err}");
}

fn assert_within(what: &str, took: Duration, bound: Duration) {
    // Printed for the docs' figures (`--nocapture`).
    eprintln!("{what}: returned after {took:?} (bound {bound:?})");
    assert!(
        took <= bound + SLACK,
        "{what} took {took:?}, past its bound of {bound:?}"
    );
}

/// A pool and locker through a proxy, the locker answering within
/// `answer` and with `lease` (set on the pool on the MySQL family).
async fn through(
    fx: &Fixture,
    proxy: &Proxy,
    answer: Duration,
    lease: Duration,
) -> (hierlock::sea_orm::DatabaseConnection, hierlock::Locker) {
    let config = fx
        .config
        .clone()
        .with_answer_timeout(answer)
        .expect("a valid answer timeout")
        .with_lease(lease)
        .expect("a valid lease");
    fx.through_with(proxy, config, Some(lease)).await
}

pub async fn a_silent_network_ends_acquisitions_by_their_deadline(backend: Backend) {
    let fx = Fixture::new(backend, "silentacq", 1000).await;
    let proxy = Proxy::start(fx.server_addr()).await;
    let answer = Duration::from_millis(800);
    let (db, locker) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    let timed = db.begin().await.expect("begin");
    let no_wait = db.begin().await.expect("begin");
    proxy.silence();
    // A timed acquisition: its deadline and the margin.
    let timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = bounded(
        "a timed acquisition on a silent network",
        locker.acquire_with(
            &timed,
            [Target::resource("u1", "a1", "r1").write()],
            Wait::Timeout(timeout),
        ),
    )
    .await
    .expect_err("nothing answers");
    assert_within(
        "a timed acquisition",
        started.elapsed(),
        timeout + DEADLINE_MARGIN,
    );
    assert_abandoned(&err, TxnState::Lost);
    // A no-wait acquisition: the answer timeout.
    let started = Instant::now();
    let err = bounded(
        "a no-wait acquisition on a silent network",
        locker.acquire_with(
            &no_wait,
            [Target::resource("u2", "a2", "r2").write()],
            Wait::NoWait,
        ),
    )
    .await
    .expect_err("nothing answers");
    assert_within("a no-wait acquisition", started.elapsed(), answer);
    assert_abandoned(&err, TxnState::Lost);
    proxy.cut();
}

pub async fn a_silent_network_ends_a_statement_and_a_commit_by_retrys_deadline(backend: Backend) {
    let fx = Fixture::new(backend, "silentretry", 1000).await;
    let deadline = Duration::from_millis(1500);
    let policy = RetryPolicy::default().with_deadline(deadline);
    for at_commit in [false, true] {
        let proxy = Proxy::start(fx.server_addr()).await;
        let (db, locker) =
            through(&fx, &proxy, Duration::from_secs(5), Duration::from_secs(60)).await;
        let started = Instant::now();
        let outcome = bounded(
            "retry on a silent network",
            retry(&db, &policy, async |txn| {
                locker
                    .acquire(txn, [Target::resource("u1", "a1", "r1").write()])
                    .await?;
                proxy.silence();
                if !at_commit {
                    let ping = Statement::from_string(txn.get_database_backend(), "SELECT 1");
                    txn.execute_raw(ping).await?;
                }
                Ok::<_, Error>(())
            }),
        )
        .await;
        let err = outcome.expect_err("nothing answers");
        assert_within("retry", started.elapsed(), deadline);
        let state = if at_commit {
            TxnState::CommitUnknown
        } else {
            TxnState::Lost
        };
        assert_abandoned(&err, state);
        proxy.cut();
    }
}

/// Whether `request` can be taken at once on a direct connection.
async fn is_free(fx: &Fixture, request: &hierlock::Request) -> bool {
    let txn = fx.begin().await;
    take(fx, &txn, std::slice::from_ref(request), Wait::NoWait)
        .await
        .is_ok()
}

pub async fn a_silent_clients_locks_are_freed_within_the_lease(backend: Backend) {
    let fx = Fixture::new(backend, "silentlease", 1000).await;
    let proxy = Proxy::start(fx.server_addr()).await;
    let lease = Duration::from_secs(2);
    let (db, locker) = through(&fx, &proxy, Duration::from_secs(5), lease).await;
    assert_eq!(locker.lease(), Some(lease), "the lease the server applies");
    let r1 = Target::resource("u1", "a1", "r1").write();
    let holder = db.begin().await.expect("begin");
    bounded(
        "an uncontended acquisition",
        locker.acquire(&holder, [r1.clone()]),
    )
    .await
    .expect("granted");
    proxy.silence();
    let silenced = Instant::now();
    assert!(!is_free(&fx, &r1).await, "held while the client is silent");
    // MySQL-family timeouts are whole seconds, checked by the server's
    // socket timer: allow a second more.
    let bound = lease + Duration::from_secs(1) + SLACK;
    loop {
        if is_free(&fx, &r1).await {
            break;
        }
        assert!(
            silenced.elapsed() < bound,
            "the silent client's lock is still held {:?} after the silence (lease {lease:?})",
            silenced.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "a silent client's lock: free {:?} after the silence (lease {lease:?})",
        silenced.elapsed()
    );
    assert!(
        silenced.elapsed() >= lease - Duration::from_millis(100),
        "freed before the lease ran out: {:?}",
        silenced.elapsed()
    );
    drop(holder);
    proxy.cut();
}

/// PostgreSQL sets the lease for the transaction only: a pooled connection
/// goes back with the server's own setting.
pub async fn the_lease_ends_with_its_transaction(backend: Backend) {
    let fx = Fixture::new(backend, "leasescope", 1000).await;
    let db = fx.another_pool(1).await;
    let config = fx
        .config
        .clone()
        .with_lease(Duration::from_secs(7))
        .expect("a valid lease");
    let locker = hierlock::Locker::connect(&db, config)
        .await
        .expect("locker");
    let before = {
        let txn = db.begin().await.expect("begin");
        crate::lease::idle_in_transaction_timeout(&txn).await
    };
    for wait in [
        Wait::Block,
        Wait::NoWait,
        Wait::Timeout(Duration::from_secs(1)),
    ] {
        let txn = db.begin().await.expect("begin");
        bounded(
            "an uncontended acquisition",
            locker.acquire_with(&txn, [Target::resource("u1", "a1", "r1").write()], wait),
        )
        .await
        .expect("granted");
        assert_eq!(
            crate::lease::idle_in_transaction_timeout(&txn).await,
            "7s",
            "the lease, for the transaction ({wait:?})"
        );
        txn.commit().await.expect("commit");
        let txn = db.begin().await.expect("begin");
        assert_eq!(
            crate::lease::idle_in_transaction_timeout(&txn).await,
            before,
            "the pooled connection's own setting ({wait:?})"
        );
    }
    // A lock handle's transaction is idle by design: no lease.
    let handle = locker
        .acquire_handle(&db, [Target::resource("u1", "a1", "r2").write()])
        .await
        .expect("granted");
    handle.release().await.expect("released");
}

pub async fn a_lock_handle_on_a_silent_network_is_lost_by_its_answer_timeout(backend: Backend) {
    let fx = Fixture::new(backend, "silenthandle", 1000).await;
    let proxy = Proxy::start(fx.server_addr()).await;
    let answer = Duration::from_millis(800);
    let (db, locker) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    let handle = locker
        .acquire_handle(&db, [Target::resource("u1", "a1", "r1").write()])
        .await
        .expect("granted");
    assert!(handle.is_held().await, "held");
    proxy.silence();
    let every = Duration::from_millis(100);
    let started = Instant::now();
    bounded("lost() on a silent network", handle.lost(every)).await;
    assert_within("lost()", started.elapsed(), every + answer);
    let started = Instant::now();
    let err = bounded("release on a silent network", handle.release())
        .await
        .expect_err("nothing answers");
    assert_within("release", started.elapsed(), Duration::ZERO);
    assert_abandoned(&err, TxnState::Lost);
    proxy.cut();
}

/// A pool with no connection to hand out in time is a typed, retryable
/// failure that changed nothing.
pub async fn an_exhausted_pool_is_a_retryable_pool_timeout(backend: Backend) {
    let fx = Fixture::new(backend, "pooltimeout", 1000).await;
    let mut options = hierlock::sea_orm::ConnectOptions::new(fx.url().to_owned());
    options
        .max_connections(1)
        .acquire_timeout(Duration::from_millis(300))
        .sqlx_logging(false);
    let db = hierlock::sea_orm::Database::connect(options)
        .await
        .expect("a pool of one");
    let busy = db.begin().await.expect("the only connection");
    let err = bounded(
        "retry on an exhausted pool",
        retry(
            &db,
            &RetryPolicy::default().with_max_attempts(1),
            async |_txn| Ok::<_, Error>(()),
        ),
    )
    .await
    .expect_err("no connection to begin on");
    assert_eq!(err.kind(), ErrorKind::PoolTimeout, "{err}");
    assert!(err.is_retryable(), "{err}");
    assert_eq!(err.txn_state(), TxnState::Unchanged, "{err}");
    drop(busy);
}

/// The steps around an acquisition end by their bounds on a silent network,
/// each with a lost connection: `Locker::connect`'s checks and
/// `acquire_handle`'s `BEGIN` by the locker's answer timeout, and `retry`'s
/// rollback after a failed attempt by the policy's.
pub async fn every_step_ends_by_its_bound_on_a_silent_network(backend: Backend) {
    let fx = Fixture::new(backend, "silentsteps", 1000).await;
    let answer = Duration::from_millis(800);
    let r1 = Target::resource("u1", "a1", "r1").write();

    // Locker::connect, on a pool whose connection went silent.
    let proxy = Proxy::start(fx.server_addr()).await;
    let (db, _) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    proxy.silence();
    let config = fx
        .config
        .clone()
        .with_answer_timeout(answer)
        .expect("valid");
    let started = Instant::now();
    let err = bounded(
        "Locker::connect on a silent network",
        hierlock::Locker::connect(&db, config),
    )
    .await
    .expect_err("nothing answers");
    assert_within("Locker::connect", started.elapsed(), answer);
    assert_abandoned(&err, TxnState::Lost);
    proxy.cut();

    // A lock handle's BEGIN.
    let proxy = Proxy::start(fx.server_addr()).await;
    let (db, locker) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    proxy.silence();
    let started = Instant::now();
    let err = bounded(
        "acquire_handle on a silent network",
        locker.acquire_handle_with(&db, [r1.clone()], Wait::Timeout(Duration::from_secs(5))),
    )
    .await
    .expect_err("nothing answers");
    assert_within("acquire_handle's BEGIN", started.elapsed(), answer);
    assert_abandoned(&err, TxnState::Lost);
    proxy.cut();

    // retry's rollback after an attempt that lost its connection (no
    // deadline: the answer timeout alone bounds it).
    let proxy = Proxy::start(fx.server_addr()).await;
    let (db, locker) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    let policy = RetryPolicy::default()
        .with_max_attempts(1)
        .with_answer_timeout(answer)
        .expect("valid");
    let started = Instant::now();
    let err = bounded(
        "retry on a silent network",
        retry(&db, &policy, async |txn| {
            locker.acquire(txn, [r1.clone()]).await?;
            proxy.silence();
            // Lost by the locker's answer timeout; then the rollback.
            locker
                .acquire_with(txn, [Target::user("u2").write()], Wait::NoWait)
                .await?;
            Ok::<_, Error>(())
        }),
    )
    .await
    .expect_err("nothing answers");
    assert_within(
        "retry's attempt and its rollback",
        started.elapsed(),
        answer * 2,
    );
    assert_abandoned(&err, TxnState::Lost);
    proxy.cut();
}

/// The canceller's side connection, silent with the network, is given up
/// after its bound and opened again: once the network is back, a deadline
/// is kept (`LockTimeout`, within the margin) by the same locker.
pub async fn the_canceller_recovers_after_a_silent_network(backend: Backend) {
    let fx = Fixture::new(backend, "silentcancel", 1000).await;
    let proxy = Proxy::start(fx.server_addr()).await;
    let answer = Duration::from_secs(5);
    let (db, locker) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    let r1 = Target::resource("u1", "a1", "r1").write();
    let _holder = crate::support::holding(&fx, std::slice::from_ref(&r1)).await;
    let timeout = Duration::from_millis(500);
    // A timed wait whose cancellation cannot get through.
    let waiter = db.begin().await.expect("begin");
    let wait = locker.acquire_with(&waiter, [r1.clone()], Wait::Timeout(timeout));
    let (err, ()) = tokio::join!(bounded("a timed wait", wait), async {
        tokio::time::sleep(timeout / 2).await;
        proxy.silence();
    });
    let err = err.expect_err("held");
    assert_eq!(err.kind(), ErrorKind::ConnectionLost, "{err}");
    // The side connection's batch, then its reconnection, are given up at
    // their bound (2 s each); the network comes back.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    proxy.resume();
    let (db, _) = through(&fx, &proxy, answer, Duration::from_secs(60)).await;
    let txn = db.begin().await.expect("begin after the network is back");
    let started = Instant::now();
    let err = bounded(
        "a timed wait after the network is back",
        locker.acquire_with(&txn, [r1], Wait::Timeout(timeout)),
    )
    .await
    .expect_err("held");
    let took = started.elapsed();
    eprintln!("{backend:?}: a timed wait after a silent network: {err} after {took:?}");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(took <= timeout + DEADLINE_MARGIN, "took {took:?}");
    drop(waiter);
    proxy.cut();
}
