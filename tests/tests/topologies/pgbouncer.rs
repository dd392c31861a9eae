//! hierlock through pgbouncer (≤ 1.20) in transaction mode.
//!
//! Every statement of an acquisition runs inside the caller's transaction,
//! which pgbouncer keeps on one server connection: the advisory locks are
//! transaction-scoped (`pg_advisory_xact_lock`), so they hold, block, time
//! out and end with that transaction as on a direct connection. What needs
//! care is sqlx's protocol use, which the settings below fix (measured on
//! pgbouncer 1.18, sqlx 0.9; docs/topologies.md):
//!
//! - sqlx sends the startup parameter `extra_float_digits`, which pgbouncer
//!   rejects: `extra_float_digits(None)`.
//! - sqlx names every prepared statement `sqlx_s_<n>` per client connection.
//!   With `statement_cache_capacity(0)` it still names them and never closes
//!   them, so pgbouncer must drop them when a transaction ends
//!   (`server_reset_query = DEALLOCATE ALL`, `server_reset_query_always = 1`).
//! - A statement outside a transaction is parsed, then bound after a Sync:
//!   pgbouncer may hand the server connection to another client in between.
//!   hierlock runs none: `Locker::connect` makes its checks in one
//!   transaction, and its cancellation side connection sends one simple
//!   query. (The application's own statements outside transactions need a
//!   session-mode pool.)
//!
//! "Blocked" is read from `pg_locks` on the server itself, for the backend
//! pid the waiting transaction reports through pgbouncer.

use std::time::{Duration, Instant};

use hierlock::{Config, ErrorKind, Locker, PostgresLocks, Request, Target, Wait};
use hierlock_migration::Provision;
use sea_orm::ConnectionTrait;
use sea_orm::sqlx::postgres::PgConnectOptions;
use sea_orm::{DatabaseConnection, DatabaseTransaction, DbBackend, Statement, TransactionTrait};

use crate::support::{
    Server, advisory_config, bucket_config, connect, exec, query_i64, try_connect, try_connect_url,
    within,
};

/// The sqlx options hierlock's pools need behind pgbouncer ≤ 1.20 in
/// transaction mode (with `server_reset_query_always`, see the module docs).
fn behind_pgbouncer(options: PgConnectOptions) -> PgConnectOptions {
    options.extra_float_digits(None).statement_cache_capacity(0)
}

/// The tests share pgbouncer's server pool; the one that fills it runs
/// alone (`write`), the others together (`read`).
static POOL: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A transaction-mode pool, a locker connected through it, and a direct
/// connection to the server for `pg_locks`.
struct Bounced {
    db: DatabaseConnection,
    locker: Locker,
    server: DatabaseConnection,
    _turn: tokio::sync::RwLockReadGuard<'static, ()>,
}

impl Bounced {
    async fn new() -> Bounced {
        let turn = POOL.read().await;
        Self::with(turn, advisory_config()).await
    }

    async fn with(turn: tokio::sync::RwLockReadGuard<'static, ()>, config: Config) -> Bounced {
        let db = try_connect(Server::Pgbouncer, 8, behind_pgbouncer)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot reach pgbouncer at {}: {e} (tests/clusters/pgbouncer.sh start)",
                    Server::Pgbouncer.url()
                )
            });
        let locker = within(10, "Locker::connect", Locker::connect(&db, config))
            .await
            .expect("a locker through the transaction-mode pool");
        let server = connect(Server::PostgresBehindPgbouncer).await;
        Bounced {
            db,
            locker,
            server,
            _turn: turn,
        }
    }

    async fn begin(&self) -> DatabaseTransaction {
        within(10, "BEGIN", self.db.begin())
            .await
            .expect("begin through pgbouncer")
    }

    async fn take(
        &self,
        txn: &DatabaseTransaction,
        request: &Request,
        wait: Wait,
    ) -> hierlock::Result<usize> {
        within(
            10,
            "an acquisition",
            self.locker.acquire_with(txn, [request.clone()], wait),
        )
        .await
        .map(|set| set.statements())
    }

    /// Lock rows of backend `pid` on the server itself (`granted` or waiting).
    async fn locks_of(&self, pid: i64, granted: bool) -> i64 {
        let row = self
            .server
            .query_one_raw(Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT COUNT(*)::int8 FROM pg_locks WHERE pid = $1 AND granted = $2",
                [pid.into(), granted.into()],
            ))
            .await
            .expect("pg_locks")
            .expect("one row");
        row.try_get_by_index::<i64>(0).expect("count")
    }

    async fn wait_until_blocked(&self, pid: i64) {
        within(10, "the waiter to wait in pg_locks", async {
            while self.locks_of(pid, false).await == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    }

    async fn wait_until_not_blocked(&self, pid: i64) -> Duration {
        let from = Instant::now();
        within(10, "the server-side wait to end", async {
            while self.locks_of(pid, false).await > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        from.elapsed()
    }
}

/// The server backend a transaction through pgbouncer runs on.
async fn backend_pid(txn: &DatabaseTransaction) -> i64 {
    query_i64(txn, "SELECT pg_backend_pid()::int8").await
}

fn resource() -> Request {
    Target::resource("u1", "a1", "r1").write()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_write_lock_blocks_a_second_acquisition() {
    let fx = Bounced::new().await;
    let holder = fx.begin().await;
    fx.take(&holder, &resource(), Wait::Block)
        .await
        .expect("uncontended");
    let waiter = fx.begin().await;
    let pid = backend_pid(&waiter).await;
    assert_ne!(
        pid,
        backend_pid(&holder).await,
        "two transactions, two server backends"
    );
    let locker = fx.locker.clone();
    let waiting = tokio::spawn(async move {
        let outcome = locker
            .acquire(&waiter, [resource()])
            .await
            .map(|set| set.statements());
        (outcome, waiter)
    });
    fx.wait_until_blocked(pid).await;
    assert!(!waiting.is_finished(), "granted while held");
    within(10, "COMMIT", holder.commit()).await.expect("commit");
    let (outcome, waiter) = within(10, "the waiter", waiting).await.expect("task");
    outcome.expect("granted once the holder committed");
    assert!(
        fx.locks_of(pid, true).await > 0,
        "the waiter's backend holds the lock"
    );
    within(10, "COMMIT", waiter.commit()).await.expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nowait_is_would_block() {
    let fx = Bounced::new().await;
    let holder = fx.begin().await;
    fx.take(&holder, &resource(), Wait::Block)
        .await
        .expect("uncontended");
    let other = fx.begin().await;
    let err = fx
        .take(&other, &resource(), Wait::NoWait)
        .await
        .expect_err("held");
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_is_lock_timeout_and_ends_the_server_side_wait() {
    let fx = Bounced::new().await;
    let holder = fx.begin().await;
    fx.take(&holder, &resource(), Wait::Block)
        .await
        .expect("uncontended");
    let waiter = fx.begin().await;
    let pid = backend_pid(&waiter).await;
    let timeout = Duration::from_millis(300);
    let from = Instant::now();
    let err = fx
        .take(&waiter, &resource(), Wait::Timeout(timeout))
        .await
        .expect_err("held");
    let waited = from.elapsed();
    assert_eq!(err.kind(), ErrorKind::LockTimeout, "{err}");
    assert!(
        waited >= timeout && waited < timeout + Duration::from_secs(3),
        "{waited:?}"
    );
    // Cancelled on the server (pg_cancel_backend through pgbouncer), not
    // left waiting until the holder ends.
    assert_eq!(
        fx.locks_of(pid, false).await,
        0,
        "still waiting on the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquisition_ends_its_server_side_wait() {
    let fx = Bounced::new().await;
    let holder = fx.begin().await;
    fx.take(&holder, &resource(), Wait::Block)
        .await
        .expect("uncontended");
    let waiter = fx.begin().await;
    let pid = backend_pid(&waiter).await;
    let wanted = resource();
    tokio::select! {
        outcome = fx.take(&waiter, &wanted, Wait::Block) => panic!("granted while held: {outcome:?}"),
        () = fx.wait_until_blocked(pid) => {}
    }
    let ended = fx.wait_until_not_blocked(pid).await;
    eprintln!("through pgbouncer: the server-side wait ended {ended:?} after the drop");
    // The cancelled statement never takes the lock later.
    within(10, "ROLLBACK", holder.rollback())
        .await
        .expect("rollback");
    let third = fx.begin().await;
    fx.take(&third, &resource(), Wait::NoWait)
        .await
        .expect("free: the dropped acquisition did not take it");
    let _ = within(10, "the waiter's rollback", waiter.rollback()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_end_with_commit_and_with_rollback() {
    let fx = Bounced::new().await;
    for commit in [true, false] {
        let txn = fx.begin().await;
        let pid = backend_pid(&txn).await;
        fx.take(&txn, &resource(), Wait::Block)
            .await
            .expect("uncontended");
        assert!(
            fx.locks_of(pid, true).await > 0,
            "held by the transaction's backend"
        );
        let other = fx.begin().await;
        let err = fx
            .take(&other, &resource(), Wait::NoWait)
            .await
            .expect_err("held");
        assert_eq!(err.kind(), ErrorKind::WouldBlock, "{err}");
        within(10, "ROLLBACK", other.rollback())
            .await
            .expect("rollback");
        if commit {
            within(10, "COMMIT", txn.commit()).await.expect("commit");
        } else {
            within(10, "ROLLBACK", txn.rollback())
                .await
                .expect("rollback");
        }
        let after = fx.begin().await;
        fx.take(&after, &resource(), Wait::NoWait)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "free after {}: {e}",
                    if commit { "commit" } else { "rollback" }
                )
            });
        within(10, "ROLLBACK", after.rollback())
            .await
            .expect("rollback");
    }
}

/// What fails without each setting: the reasons the settings are documented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_settings_pgbouncer_refuses_or_loses_statements() {
    // sqlx's defaults: pgbouncer refuses the connection.
    let err = try_connect(Server::Pgbouncer, 1, |options| options)
        .await
        .expect_err("pgbouncer rejects sqlx's startup parameters");
    assert!(
        err.to_string()
            .contains("unsupported startup parameter: extra_float_digits"),
        "{err}"
    );

    // The statement cache on: the second transaction on a pooled connection
    // binds a statement its server connection no longer has.
    let cached = try_connect(Server::Pgbouncer, 1, |options| {
        options.extra_float_digits(None)
    })
    .await
    .expect("connects without extra_float_digits");
    let failures = two_transactions(&cached).await;
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("prepared statement \"sqlx_s_1\" does not exist"),
        "{failures:?}"
    );

    // With the right options, a statement outside a transaction is still
    // lost between Parse and Bind (pgbouncer resets the server connection it
    // was parsed on): the application's own, that is. `Locker::connect`
    // makes its checks in one transaction, so it connects.
    let db = try_connect(Server::Pgbouncer, 2, behind_pgbouncer)
        .await
        .expect("connects");
    let outside: Vec<String> = {
        let mut failures = Vec::new();
        for i in 0..4_i64 {
            let stmt = Statement::from_sql_and_values(
                DbBackend::Postgres,
                "SELECT $1::int8 AS v",
                [i.into()],
            );
            if let Err(e) = db.query_one_raw(stmt).await {
                failures.push(e.to_string());
            }
        }
        failures
    };
    eprintln!(
        "statements outside a transaction through pgbouncer: {} of 4 failed",
        outside.len()
    );
    within(
        10,
        "Locker::connect",
        Locker::connect(&db, advisory_config()),
    )
    .await
    .expect("Locker::connect runs its checks in a transaction");
}

/// Two transactions on one pooled connection, each running a prepared
/// statement: the errors, if any.
async fn two_transactions(db: &DatabaseConnection) -> Vec<String> {
    let mut failures = Vec::new();
    for i in 0..2_i64 {
        let txn = within(10, "BEGIN", db.begin()).await.expect("begin");
        let stmt =
            Statement::from_sql_and_values(DbBackend::Postgres, "SELECT $1::int8", [i.into()]);
        if let Err(e) = txn.query_one_raw(stmt).await {
            failures.push(e.to_string());
        }
        let _ = within(10, "ROLLBACK", txn.rollback()).await;
    }
    failures
}

/// The URL parameter `statement-cache-capacity=0` is the same setting as
/// `statement_cache_capacity(0)`; `extra_float_digits` has no URL parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_setting_also_works_as_a_url_parameter() {
    let url = format!("{}?statement-cache-capacity=0", Server::Pgbouncer.url());
    let db = try_connect_url(&url, 1, |options| options.extra_float_digits(None))
        .await
        .expect("connects");
    assert_eq!(two_transactions(&db).await, Vec::<String>::new());
}

/// A storm of dropped waiters through pgbouncer's transaction pooling (8
/// waiters on a hot lock dropped together, the holder committing at once)
/// never reaches another request: 8 fresh requests on the same client pool,
/// then on a client pool of its own (another service instance behind the
/// same pgbouncer), all commit, 30 rounds each. The cancellations name the
/// server backend *and* its transaction, which pgbouncer may have given to
/// another client by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_dropped_waiters_reaches_no_other_client() {
    const ROUNDS: usize = 30;
    const WIDTH: usize = 8;
    let fx = Bounced::new().await;
    let other = try_connect(Server::Pgbouncer, WIDTH as u32, behind_pgbouncer)
        .await
        .expect("another client pool through pgbouncer");
    let blocked = |pids: Vec<i64>| {
        let fx = &fx;
        async move {
            for pid in pids {
                fx.wait_until_blocked(pid).await;
            }
        }
    };
    for (fresh, which) in [
        (&fx.db, "the same client pool"),
        (&other, "another client pool"),
    ] {
        let outcome = hierlock_tests::storm::dropped_waiters_then_fresh_requests(
            &fx.locker, &fx.db, fresh, &fx.server, ROUNDS, WIDTH, blocked,
        )
        .await;
        eprintln!("through pgbouncer, fresh requests on {which}: {outcome:?}");
        outcome.assert_no_bystander_failed(
            ROUNDS,
            WIDTH,
            &format!("through pgbouncer, on {which}"),
        );
    }
}

/// More waiters with a deadline than pgbouncer has server connections
/// (`default_pool_size = 20`): hierlock's cancellations through pgbouncer
/// queue behind them, so the deadline must be kept by the server itself
/// (PostgreSQL's `lock_timeout`, set by the lock statement). Every waiter
/// ends with `LockTimeout`, by its deadline and the server's answer; those
/// that got a server connection only once others ended wait their own
/// deadline from then. Advisory locks and the bucket table (provisioned on
/// the server directly).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_burst_on_a_full_server_pool_ends_in_lock_timeouts() {
    const WAITERS: usize = 30;
    let timeout = Duration::from_millis(300);
    let buckets = bucket_config("pgbouncer_burst").with_postgres_locks(PostgresLocks::BucketTable);
    let server = connect(Server::PostgresBehindPgbouncer).await;
    for table in [buckets.table().to_string(), buckets.table().meta()] {
        exec(&server, &format!("DROP TABLE IF EXISTS {table}")).await;
    }
    within(
        30,
        "provisioning",
        Provision::new(buckets.clone()).run(&server),
    )
    .await
    .expect("provisioning the bucket table");
    for (config, mode) in [(advisory_config(), "advisory"), (buckets, "bucket table")] {
        // Alone: the burst fills the server pool the other tests use.
        let alone = POOL.write().await;
        let fx = Bounced::with(tokio::sync::RwLockWriteGuard::downgrade(alone), config).await;
        let clients = try_connect(Server::Pgbouncer, WAITERS as u32, behind_pgbouncer)
            .await
            .expect("a client pool through pgbouncer");
        let holder = fx.begin().await;
        fx.take(&holder, &resource(), Wait::Block)
            .await
            .expect("uncontended");
        let outcomes = futures::future::join_all((0..WAITERS).map(|_| {
            let (fx, clients) = (&fx, &clients);
            async move {
                let txn = within(30, "BEGIN", clients.begin())
                    .await
                    .expect("begin through pgbouncer");
                let from = Instant::now();
                let outcome = within(
                    30,
                    "an acquisition",
                    fx.locker
                        .acquire_with(&txn, [resource()], Wait::Timeout(timeout)),
                )
                .await
                .map(drop);
                let took = from.elapsed();
                drop(txn);
                (outcome, took)
            }
        }))
        .await;
        holder.rollback().await.expect("rollback");
        let mut late = Vec::new();
        for (outcome, took) in &outcomes {
            let err = outcome.as_ref().expect_err("held");
            assert_eq!(err.kind(), ErrorKind::LockTimeout, "{mode}: {err}");
            if *took > timeout + Duration::from_millis(400) {
                late.push(*took);
            }
        }
        let longest = outcomes.iter().map(|(_, took)| *took).max();
        eprintln!("{mode}: {WAITERS} waiters on a server pool of 20: longest wait {longest:?}");
        assert!(late.is_empty(), "{mode}: ended past the deadline: {late:?}");
    }
}
