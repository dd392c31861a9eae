//! Giving up a lock wait: a dropped acquisition future, and the deadline of
//! `Wait::Timeout`, end the wait on the server too (on SQLite, in hierlock's
//! busy handler).

use std::time::{Duration, Instant};

use hierlock::{DEADLINE_MARGIN, ErrorKind, Target, Wait};
use hierlock_tests::{Backend, Fixture, Proxy, bounded};
use sea_orm::{ConnectionTrait, DbErr, Statement, TransactionTrait};

use crate::support::{holding, take};

/// Poll the server's lock-wait view until connection `id` no longer waits.
async fn wait_until_not_waiting(fx: &Fixture, id: i64) -> Duration {
    let from = Instant::now();
    bounded("the server-side wait to end", async {
        while fx.is_waiting(id).await {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    from.elapsed()
}

pub async fn a_dropped_acquisition_ends_its_server_side_wait(backend: Backend) {
    let fx = Fixture::new(backend, "dropwait", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let waiter = fx.begin().await;
    let id = fx.connection_id(&waiter).await;
    // The acquisition future is dropped as soon as the server shows it waiting
    // (a cancelled request, a `select!` that chose another branch).
    tokio::select! {
        outcome = take(&fx, &waiter, std::slice::from_ref(&r), Wait::Block) => {
            panic!("granted while held: {outcome:?}")
        }
        () = fx.wait_until_blocked(id) => {}
    }
    let ended = wait_until_not_waiting(&fx, id).await;
    eprintln!("{backend:?}: server-side wait ended {ended:?} after the drop");
    // The cancelled statement never takes the lock: once the holder is gone
    // it is free at once.
    holder.rollback().await.expect("rollback");
    let third = fx.begin().await;
    bounded(
        "a no-wait acquisition",
        take(&fx, &third, std::slice::from_ref(&r), Wait::NoWait),
    )
    .await
    .expect("the dropped acquisition did not take the lock later");
    // The waiter's connection was ended with its wait (the driver's
    // connection was left mid-statement): its transaction is gone, and the
    // rollback either finds nothing to do or reports the lost connection.
    let rollback = bounded("the waiter's rollback", waiter.rollback()).await;
    if let Err(e) = rollback {
        let kind = hierlock::Error::from(e).kind();
        assert_eq!(kind, ErrorKind::ConnectionLost, "the waiter's rollback");
    }
    // And the pool hands out working connections.
    let after = fx.begin().await;
    bounded(
        "an acquisition after the cancellation",
        take(
            &fx,
            &after,
            &[Target::resource("u1", "a1", "r2").write()],
            Wait::NoWait,
        ),
    )
    .await
    .expect("a clean connection");
}

pub async fn a_timeout_is_one_deadline_for_the_whole_acquisition(backend: Backend) {
    let fx = Fixture::new(backend, "deadline", 1000).await;
    // Two resources of one account, in the order the plan locks them.
    let key_of = |target: &Target| {
        let plan = fx.locker.plan(&[target.clone().write()]).expect("plan");
        plan.locks().last().expect("the resource's own lock").key
    };
    let (mut first, mut second) = (
        Target::resource("u1", "a1", "r1"),
        Target::resource("u1", "a1", "r2"),
    );
    assert_ne!(key_of(&first), key_of(&second), "distinct buckets");
    if key_of(&second) < key_of(&first) {
        std::mem::swap(&mut first, &mut second);
    }
    // The waiter locks `first` (exclusive), then `second` (shared): two lock
    // statements on the bucket table, or two waits in one advisory statement.
    // `first` is released after 1 s, `second` never. As one deadline, a
    // 1.5 s timeout gives up at 1.5 s; per statement (or per lock wait) it
    // would wait 1 s + 1.5 s.
    let first_holder = holding(&fx, &[first.clone().write()]).await;
    let _second_holder = holding(&fx, &[second.clone().write()]).await;
    let waiter = fx.begin().await;
    let wanted = [first.write(), second.read()];
    let timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let (outcome, ()) = tokio::join!(
        bounded(
            "the timed acquisition",
            take(&fx, &waiter, &wanted, Wait::Timeout(timeout))
        ),
        async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            first_holder
                .rollback()
                .await
                .expect("release the first resource");
        }
    );
    let waited = started.elapsed();
    let err = outcome.expect_err("the second resource is never released");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    eprintln!("{backend:?}: Wait::Timeout({timeout:?}) gave up after {waited:?}");
    assert!(waited >= timeout, "gave up early: {waited:?}");
    assert!(
        waited < Duration::from_millis(2300),
        "waited {waited:?}: the timeout is not one deadline for the acquisition"
    );
}

pub async fn timeouts_have_millisecond_precision(backend: Backend) {
    let fx = Fixture::new(backend, "precision", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _holder = holding(&fx, std::slice::from_ref(&r)).await;
    let waiter = fx.begin().await;
    let timeout = Duration::from_millis(250);
    let started = Instant::now();
    let err = bounded(
        "the timed acquisition",
        take(
            &fx,
            &waiter,
            std::slice::from_ref(&r),
            Wait::Timeout(timeout),
        ),
    )
    .await
    .expect_err("held");
    let waited = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    eprintln!("{backend:?}: Wait::Timeout({timeout:?}) gave up after {waited:?}");
    // Whole seconds (the servers' own setting) would be 1 s; a side
    // connection opened only when the first wait is cancelled would make
    // this first timed acquisition of the locker 50–115 ms late.
    assert!(
        waited >= timeout && waited < timeout + Duration::from_millis(45),
        "waited {waited:?} for a {timeout:?} timeout"
    );
}

/// SQLite: `Wait::Timeout(d)` gives up a few milliseconds after `d` (the busy
/// handler's sleep step; SQLite's own busy timeout without the handler).
pub async fn sqlite_timeouts_are_kept_to_a_few_milliseconds(backend: Backend) {
    let fx = Fixture::new(backend, "litedeadline", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _holder = holding(&fx, std::slice::from_ref(&r)).await;
    for timeout in [150, 40].map(Duration::from_millis) {
        let waiter = fx.begin().await;
        let started = Instant::now();
        let err = bounded(
            "the timed acquisition",
            take(
                &fx,
                &waiter,
                std::slice::from_ref(&r),
                Wait::Timeout(timeout),
            ),
        )
        .await
        .expect_err("held");
        let waited = started.elapsed();
        assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
        eprintln!("{backend:?}: Wait::Timeout({timeout:?}) gave up after {waited:?}");
        assert!(
            waited >= timeout && waited < timeout + Duration::from_millis(60),
            "waited {waited:?} for a {timeout:?} timeout"
        );
    }
}

/// SQLite with hierlock's busy handler: an acquisition future dropped while
/// it waits stops waiting at once, so its connection serves its next
/// statement (without the handler it would wait out the busy timeout, 5 s),
/// and it never takes the lock later.
pub async fn a_dropped_sqlite_acquisition_frees_its_connection_at_once(backend: Backend) {
    let fx = Fixture::new(backend, "litedrop", 1000).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let waiter = fx.begin().await;
    tokio::select! {
        outcome = take(&fx, &waiter, std::slice::from_ref(&r), Wait::Block) => {
            panic!("granted while held: {outcome:?}")
        }
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    let dropped = Instant::now();
    bounded(
        "the waiter's next statement",
        query_i64(&waiter, "SELECT 1"),
    )
    .await
    .expect("the waiter's connection works");
    let answered = dropped.elapsed();
    eprintln!("{backend:?}: the waiter's connection answered {answered:?} after the drop");
    assert!(
        answered < Duration::from_millis(100),
        "the dropped acquisition kept its connection waiting for {answered:?}"
    );
    // Still waiting, the dropped statement would take the lock as soon as
    // the holder is gone; it does not, so a no-wait acquisition gets it.
    holder.commit().await.expect("commit");
    let third = fx.begin().await;
    bounded(
        "a no-wait acquisition",
        take(&fx, &third, std::slice::from_ref(&r), Wait::NoWait),
    )
    .await
    .expect("the dropped acquisition did not take the lock later");
    third.rollback().await.expect("rollback");
    waiter
        .rollback()
        .await
        .expect("the waiter's transaction ends cleanly");
}

/// SQLite with hierlock's busy handler: acquisitions that succeed, time out
/// or are dropped mid-wait change no setting of their connection, and its
/// other statements still wait as its configured busy timeout (5 s, sqlx's
/// default).
pub async fn sqlite_acquisitions_leave_the_connections_waits_as_configured(backend: Backend) {
    const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
    let fx = Fixture::new(backend, "litesettings", 1000).await;
    // One connection: every transaction below runs on it.
    let one = fx.another_pool(1).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let ordinary_write = format!("UPDATE {} SET id = id WHERE 0", fx.config.table().meta());
    // With the handler installed SQLite reports 0 (the handler replaced its
    // busy timeout; it keeps the value for other statements). Setting it
    // would remove the handler.
    let setting = query_i64(&one, "PRAGMA busy_timeout").await.expect("read");

    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let txn = one.begin().await.expect("begin");
    let timeout = Duration::from_millis(150);
    let err = bounded(
        "a timed acquisition",
        take(&fx, &txn, std::slice::from_ref(&r), Wait::Timeout(timeout)),
    )
    .await
    .expect_err("held");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    let after = query_i64(&txn, "PRAGMA busy_timeout").await.expect("read");
    assert_eq!(after, setting, "after a timed-out acquisition");

    // Dropped while it waits, long before its deadline.
    tokio::select! {
        outcome = take(&fx, &txn, std::slice::from_ref(&r), Wait::Timeout(BUSY_TIMEOUT / 2)) => {
            panic!("granted while held: {outcome:?}")
        }
        () = tokio::time::sleep(Duration::from_millis(200)) => {}
    }
    let after = bounded(
        "reading the setting",
        query_i64(&txn, "PRAGMA busy_timeout"),
    )
    .await
    .expect("read");
    assert_eq!(after, setting, "after a dropped acquisition");
    // An ordinary write waits for the holder, who leaves 500 ms later.
    let started = Instant::now();
    let (written, ()) = tokio::join!(
        bounded("an ordinary write", exec(&txn, &ordinary_write)),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            holder.rollback().await.expect("rollback");
        }
    );
    written.expect("an ordinary write waits as the busy timeout allows");
    eprintln!(
        "{backend:?}: an ordinary write waited {:?} for the holder",
        started.elapsed()
    );
    txn.rollback().await.expect("rollback");

    let txn = one.begin().await.expect("begin");
    bounded(
        "an uncontended acquisition",
        take(&fx, &txn, std::slice::from_ref(&r), Wait::Timeout(timeout)),
    )
    .await
    .expect("free");
    txn.commit().await.expect("commit");
    let after = query_i64(&one, "PRAGMA busy_timeout").await.expect("read");
    assert_eq!(after, setting, "after a successful acquisition");

    // And an ordinary write gives up after the busy timeout, as before.
    let _holder = holding(&fx, std::slice::from_ref(&r)).await;
    let started = Instant::now();
    let err = bounded("an ordinary write", exec(&one, &ordinary_write))
        .await
        .expect_err("held");
    let waited = started.elapsed();
    eprintln!("{backend:?}: an ordinary write gave up after {waited:?}: {err}");
    assert_eq!(
        hierlock::conflict_kind(&err),
        Some(ErrorKind::LockTimeout),
        "{err}"
    );
    assert!(
        waited >= BUSY_TIMEOUT && waited < BUSY_TIMEOUT + Duration::from_millis(500),
        "an ordinary write waited {waited:?}, not the {BUSY_TIMEOUT:?} busy timeout"
    );
}

/// `hierlock::sqlite::install_busy_handler` in an application's own
/// `after_connect`, on a sqlx pool given to SeaORM, run twice: the second
/// does nothing (it would otherwise read the busy timeout as 0, which SQLite
/// reports once a busy handler replaced it, and ordinary statements would
/// stop waiting).
pub async fn installing_the_sqlite_busy_handler_twice_keeps_the_busy_timeout(backend: Backend) {
    use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
    let fx = Fixture::new(backend, "litetwice", 1000).await;
    let options: SqliteConnectOptions = fx.url().parse().expect("a SQLite URL");
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                hierlock::sqlite::install_busy_handler(conn).await?;
                hierlock::sqlite::install_busy_handler(conn).await
            })
        })
        .connect_with(options)
        .await
        .expect("a pool");
    let db = sea_orm::SqlxSqliteConnector::from_sqlx_sqlite_pool(pool);
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let ordinary_write = format!("UPDATE {} SET id = id WHERE 0", fx.config.table().meta());
    let (written, ()) = tokio::join!(
        bounded("an ordinary write", exec(&db, &ordinary_write)),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            holder.rollback().await.expect("rollback");
        }
    );
    written.expect("an ordinary write waits as the busy timeout allows");
    // And the lock statement's waits follow the acquisition.
    let _holder = holding(&fx, std::slice::from_ref(&r)).await;
    let txn = db.begin().await.expect("begin");
    let started = Instant::now();
    let err = bounded(
        "a timed acquisition",
        take(
            &fx,
            &txn,
            std::slice::from_ref(&r),
            Wait::Timeout(Duration::from_millis(100)),
        ),
    )
    .await
    .expect_err("held");
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(160), "waited {waited:?}");
    let setting = query_i64(&txn, "PRAGMA busy_timeout").await.expect("read");
    assert_eq!(
        setting, 0,
        "the handler is installed and the setting untouched"
    );
}

async fn query_i64(conn: &impl ConnectionTrait, sql: &str) -> Result<i64, DbErr> {
    let row = conn
        .query_one_raw(Statement::from_string(conn.get_database_backend(), sql))
        .await?
        .expect("one row");
    row.try_get_by_index(0)
        .map_err(|e| DbErr::Custom(format!("{sql}: {e}")))
}

async fn exec(conn: &impl ConnectionTrait, sql: &str) -> Result<(), DbErr> {
    conn.execute_raw(Statement::from_string(conn.get_database_backend(), sql))
        .await
        .map(drop)
}

/// A request dropped while its acquisition waits (a request timeout: the
/// acquisition and its transaction go together) gives its pool's only
/// connection back: the connection is closed, and within 500 ms past the
/// cost of a new connection the pool hands out a working one, every time.
pub async fn a_dropped_request_gives_its_connection_back(backend: Backend) {
    dropped_requests_give_their_connections_back(backend, false).await;
}

/// The same with `acquire_reading`, whose lock statement also reads rows.
pub async fn a_dropped_reading_request_gives_its_connection_back(backend: Backend) {
    dropped_requests_give_their_connections_back(backend, true).await;
}

/// Requests dropped while they wait (`reading`: through `acquire_reading`)
/// give their pool's connection back in a new connection's time.
async fn dropped_requests_give_their_connections_back(backend: Backend, reading: bool) {
    const REPS: usize = 20;
    let fx = Fixture::new(
        backend,
        if reading { "droppoolr" } else { "droppool" },
        1000,
    )
    .await;
    if reading {
        crate::reading::prepare_ledger(&fx).await;
    }
    let r = Target::resource("u1", "a1", "r1").write();
    let holder = holding(&fx, std::slice::from_ref(&r)).await;
    let pool = fx.another_pool(1).await;
    // The dropped request's connection is closed: the pool opens a new one,
    // so the bound is 500 ms past what a new connection costs here (TLS and
    // authentication: ~50 ms to MySQL 9, ~100 ms to PostgreSQL on the
    // project's machine). What it guards against takes seconds (a
    // connection held until the wait, a deadline or a server timeout ends);
    // 100 ms past was once missed by 12 ms on the 2-core CI machine with
    // the whole suite running.
    let mut connect = Duration::MAX;
    for _ in 0..3 {
        let from = Instant::now();
        let fresh = fx.another_pool(1).await;
        let txn = fresh.begin().await.expect("begin");
        txn.execute_unprepared("SELECT 1")
            .await
            .expect("a new connection");
        connect = connect.min(from.elapsed());
    }
    let bound = connect + Duration::from_millis(500);
    let mut slowest = Duration::ZERO;
    for rep in 0..REPS {
        // Blocking and timed acquisitions alike (a timed one runs in a
        // savepoint on PostgreSQL).
        let wait = if rep % 2 == 0 {
            Wait::Block
        } else {
            Wait::Timeout(Duration::from_secs(5))
        };
        let (id_tx, id_rx) = tokio::sync::oneshot::channel();
        let request = async {
            let txn = pool.begin().await.expect("begin");
            id_tx
                .send(fx.connection_id(&txn).await)
                .expect("the test listens");
            if reading {
                crate::reading::take_reading(&fx, &txn, std::slice::from_ref(&r), wait).await
            } else {
                take(&fx, &txn, std::slice::from_ref(&r), wait).await
            }
        };
        tokio::select! {
            outcome = request => panic!("granted while held: {outcome:?}"),
            () = async {
                let id = id_rx.await.expect("the connection's id");
                fx.wait_until_blocked(id).await;
                // A request timeout ends a wait of some length (the side
                // connection that cancels is opened as the wait begins).
                tokio::time::sleep(Duration::from_millis(150)).await;
            } => {}
        }
        let dropped = Instant::now();
        let txn = tokio::time::timeout(Duration::from_secs(5), pool.begin())
            .await
            .unwrap_or_else(|_| {
                panic!("{backend:?}, rep {rep} ({wait:?}): the pool is stuck 5 s after a drop")
            })
            .expect("begin after the drop");
        txn.execute_unprepared("SELECT 1")
            .await
            .expect("a usable connection");
        let back = dropped.elapsed();
        txn.rollback().await.expect("rollback");
        slowest = slowest.max(back);
        assert!(
            back < bound,
            "{backend:?}, rep {rep} ({wait:?}): the pool gave a connection back {back:?} after the drop \
             (a new connection costs {connect:?})"
        );
    }
    eprintln!(
        "{backend:?} (reading: {reading}): a connection back at most {slowest:?} after a drop, \
         {REPS} reps (a new connection: {connect:?})"
    );
    holder.rollback().await.expect("rollback");
}

/// A storm of dropped waiters on a hot lock (eight requests cancelled
/// together, the holder committing at once) never reaches the requests after
/// it: the fresh requests that get the dropped requests' connections, on the
/// same pool of eight, all take the lock and commit, 30 rounds in a row.
/// (A session end aimed at "the connection that runs a lock statement" used
/// to land on a fresh request's statement: 60–171 of 240 failed.)
pub async fn a_storm_of_dropped_waiters_never_reaches_the_next_requests(backend: Backend) {
    const ROUNDS: usize = 30;
    const WIDTH: usize = 8;
    let fx = Fixture::new(backend, "storm", 1000).await;
    let pool = fx.another_pool(WIDTH as u32).await;
    let fx = &fx;
    let outcome = hierlock_tests::storm::dropped_waiters_then_fresh_requests(
        &fx.locker,
        &pool,
        &pool,
        &fx.db,
        ROUNDS,
        WIDTH,
        |ids| async move { fx.wait_until_all_blocked(&ids).await },
    )
    .await;
    eprintln!("{backend:?}: after {ROUNDS} storms of {WIDTH} dropped waiters: {outcome:?}");
    outcome.assert_no_bystander_failed(ROUNDS, WIDTH, &format!("{backend:?}"));
}

/// A burst of waiters reaching their deadline together, on a network with
/// 5 ms per round trip (a server in another zone): 40 acquisitions with
/// `Wait::Timeout(1 s)` behind one holder all end `LockTimeout` by their
/// deadline and its margin, none `ConnectionLost`. Their cancellations go
/// through the same slow network, queued for the one side connection, and
/// are sent in batches.
pub async fn a_deadline_burst_on_a_slow_network_ends_in_lock_timeouts(backend: Backend) {
    const WAITERS: usize = 40;
    let timeout = Duration::from_secs(1);
    let fx = Fixture::new(backend, "burst", 1000).await;
    let proxy = Proxy::start_with_latency(fx.server_addr(), Duration::from_millis(5)).await;
    let (db, locker) = fx
        .through_pool(&proxy, fx.config.clone(), None, WAITERS as u32 + 2)
        .await;
    let r = Target::resource("u1", "a1", "r1").write();
    let _holder = holding(&fx, std::slice::from_ref(&r)).await;
    // Every waiter has its transaction before the burst starts.
    let mut txns = Vec::with_capacity(WAITERS);
    for _ in 0..WAITERS {
        txns.push(db.begin().await.expect("begin through the proxy"));
    }
    let outcomes = futures::future::join_all(txns.iter().map(|txn| {
        let (locker, r) = (&locker, r.clone());
        async move {
            let started = Instant::now();
            let outcome = locker
                .acquire_with(txn, [r], Wait::Timeout(timeout))
                .await
                .map(drop);
            (outcome, started.elapsed())
        }
    }))
    .await;
    let slowest = outcomes
        .iter()
        .map(|(_, took)| *took)
        .max()
        .unwrap_or_default();
    eprintln!(
        "{backend:?}: {WAITERS} waiters with a {timeout:?} timeout, 5 ms per round trip: the last returned after {slowest:?}"
    );
    for (i, (outcome, took)) in outcomes.iter().enumerate() {
        let err = outcome.as_ref().expect_err("held");
        assert_eq!(
            err.kind(),
            ErrorKind::LockTimeout,
            "waiter {i} after {took:?}: {err}"
        );
        assert!(
            *took >= timeout && *took <= timeout + DEADLINE_MARGIN,
            "waiter {i} returned after {took:?}"
        );
    }
}

/// The MySQL family's fence (a session lock) outlives the statement that
/// waited, and the connection's next wait lets it go, in the statement
/// that takes its own: however many waits a connection serves, it holds at
/// most its last one's fence between them, and no round trip of its own
/// releases it while the locks are held. (Released by no later statement,
/// fences pile up, one per wait; released right after the grant, none
/// stays.) Read from the server's own view of user locks.
pub async fn a_connection_keeps_only_its_last_waits_fence(backend: Backend) {
    let fx = Fixture::new(backend, "keptfence", 1000).await;
    let held_by = |id: i64| match backend {
        Backend::MariaDb => format!(
            "SELECT COUNT(*) FROM information_schema.METADATA_LOCK_INFO \
             WHERE LOCK_TYPE = 'User lock' AND THREAD_ID = {id} \
             AND TABLE_SCHEMA LIKE 'hierlock\\_fence\\_%'"
        ),
        _ => format!(
            "SELECT COUNT(*) FROM performance_schema.metadata_locks AS l \
             JOIN performance_schema.threads AS t ON t.THREAD_ID = l.OWNER_THREAD_ID \
             WHERE l.OBJECT_TYPE = 'USER LEVEL LOCK' AND t.PROCESSLIST_ID = {id} \
             AND l.OBJECT_NAME LIKE 'hierlock\\_fence\\_%'"
        ),
    };
    // MariaDB shows user locks through a plugin it ships, not loaded by
    // default: loaded for the test, and unloaded after it if it was not
    // loaded before.
    let load_plugin = backend == Backend::MariaDb
        && query_i64(
            &fx.db,
            "SELECT COUNT(*) FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO'",
        )
        .await
        .expect("the plugin list")
            == 0;
    if load_plugin {
        fx.exec("INSTALL SONAME 'metadata_lock_info'").await;
    }
    // One connection: every round waits on it.
    let pool = fx.another_pool(1).await;
    let r = Target::resource("u1", "a1", "r1").write();
    let mut ids = Vec::new();
    for round in 1..=3 {
        let holder = holding(&fx, std::slice::from_ref(&r)).await;
        let waiter = pool.begin().await.expect("begin");
        let id = fx.connection_id(&waiter).await;
        let (granted, ()) = tokio::join!(
            bounded(
                "the waiting acquisition",
                take(&fx, &waiter, std::slice::from_ref(&r), Wait::Block)
            ),
            async {
                fx.wait_until_blocked(id).await;
                holder.commit().await.expect("the holder commits");
            }
        );
        granted.expect("granted once the holder committed");
        waiter.commit().await.expect("the waiter commits");
        let kept = query_i64(&fx.db, &held_by(id))
            .await
            .expect("the server's user locks");
        assert_eq!(
            kept, 1,
            "round {round}: the fences connection {id} holds between requests"
        );
        ids.push(id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "every round ran on the pool's one connection");
    if load_plugin {
        fx.exec("UNINSTALL SONAME 'metadata_lock_info'").await;
    }
}
