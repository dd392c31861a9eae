//! Taking a plan's locks on a transaction: [`Locker`] and [`LockSet`].

use std::sync::Arc;

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, QueryResult, Statement,
    TransactionTrait,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::cancel::{CancelOnDrop, Canceller, End};
use crate::backend::classify::{Conflict, classify, is_missing_table, lock_memory_full_hint};
use crate::backend::sqlite::is_missing_lock_wait_function;
use crate::backend::sqlite::waits::{Limit, Registration};
use crate::config::{Config, DEADLINE_MARGIN, PostgresLocks, Wait};
use crate::backend::dialect::{Dialect, server_version};
use crate::error::{Error, ErrorKind, Result, TxnState};
use crate::model::plan::{KeyKind, Keyspace, LockPlan, PlannedLock};
use crate::lease;
use crate::schema;
use crate::model::target::{Access, Request, Target};
use crate::runtime::telemetry;
use crate::backend::topology::{self, Topology};

/// How locks are represented on the connected server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strategy {
    /// Row locks on the bucket table (MySQL, MariaDB; PostgreSQL on request).
    BucketRows,
    /// PostgreSQL transaction-scoped advisory locks.
    Advisory { namespace: u16 },
    /// SQLite's one database-wide write lock.
    SqliteWriteLock,
}

/// Takes hierarchical locks on transactions of one database.
///
/// Made once per database by [`Locker::connect`], which detects the server and
/// checks the bucket table; cheap to clone and share between tasks.
///
/// ```no_run
/// # async fn demo(db: sea_orm::DatabaseConnection) -> Result<(), Box<dyn std::error::Error>> {
/// use hierlock::{Config, Locker, Target};
/// use sea_orm::TransactionTrait;
///
/// let locker = Locker::connect(&db, Config::default()).await?;
/// let txn = db.begin().await?;
/// // Shared on User(u1) and Account(u1/a1), exclusive on Resource(u1/a1/r1):
/// locker.acquire(&txn, [Target::resource("u1", "a1", "r1").write()]).await?;
/// // … writes protected by the lock …
/// txn.commit().await?; // releases the locks with the writes
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Locker {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    dialect: Dialect,
    strategy: Strategy,
    /// Ends the server-side wait of a lock statement that is given up.
    canceller: Canceller,
    topology: Topology,
    /// The lease the server applies (see [`Locker::lease`]).
    lease: Option<std::time::Duration>,
}

const SAVEPOINT: &str = "hierlock_acquire";

/// The largest plan tried key by key before waiting on PostgreSQL: its
/// probe nests one `CASE` per key. Larger plans read the connection id
/// first and wait at once.
const MAX_PROBED_KEYS: usize = 64;

/// How long to wait for a lock statement interrupted at its deadline to end.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Locker {
    /// Detect the server behind `db` and check that it is ready for `config`.
    ///
    /// With the bucket table (MySQL, MariaDB, or PostgreSQL with
    /// [`PostgresLocks::BucketTable`]) this reads the table's metadata row.
    /// On SQLite it creates hierlock's one-row metadata table if missing;
    /// connect SQLite's pool with `hierlock::sqlite::connect`, so that its
    /// lock waits end when their acquisition is dropped.
    ///
    /// # Errors
    /// - [`Error::NotProvisioned`]: the bucket table or its metadata is missing,
    ///   or provisioning did not finish.
    /// - [`Error::ConfigMismatch`]: the table was provisioned for another key
    ///   scheme or bucket space.
    /// - [`Error::UnsafeTopology`]: a server on which locks would not exclude
    ///   each other (a Galera node or a multi-primary Group Replication
    ///   member, unless opted in; a Group Replication secondary or a member
    ///   that is not ONLINE; a read-only server, a
    ///   replica, a hot standby).
    /// - [`Error::Database`]: the server could not be asked.
    pub async fn connect(db: &DatabaseConnection, config: Config) -> Result<Locker> {
        // In one transaction, so that the checks also run through a
        // transaction-pooling proxy (pgbouncer), which keeps a server
        // connection only for a transaction.
        let txn = db
            .begin()
            .await
            .map_err(|e| Error::database("beginning the locker's checks", e))?;
        let version = server_version(&txn).await?;
        let dialect = Dialect::of(txn.get_database_backend(), version.as_deref())?;
        let strategy = match (dialect, config.postgres_locks()) {
            (Dialect::Postgres, PostgresLocks::Advisory { namespace }) => {
                Strategy::Advisory { namespace }
            }
            (Dialect::Sqlite, _) => Strategy::SqliteWriteLock,
            _ => Strategy::BucketRows,
        };
        let topology = topology::check(&txn, dialect, version.as_deref(), &config).await?;
        let lease = match strategy {
            Strategy::SqliteWriteLock => None,
            _ if dialect.is_mysql_family() => lease::session_lease(&txn, dialect).await?,
            _ => config.lease(),
        };
        warn_if_lease_longer(dialect, lease, config.lease());
        match strategy {
            Strategy::BucketRows => schema::verify(&txn, dialect, &config).await?,
            Strategy::SqliteWriteLock => schema::ensure_sqlite(&txn, &config).await?,
            Strategy::Advisory { .. } => {}
        }
        txn.commit()
            .await
            .map_err(|e| Error::database("ending the locker's checks", e))?;
        tracing::debug!(?dialect, ?strategy, table = %config.table(), ?lease, "hierlock locker ready");
        let canceller = Canceller::new(db, dialect);
        // Open the side connection now, so that the first acquisition to be
        // cancelled (at its deadline) does not wait for it to connect.
        canceller.warm();
        Ok(Locker {
            inner: Arc::new(Inner {
                config,
                dialect,
                strategy,
                canceller,
                topology,
                lease,
            }),
        })
    }

    /// The lease in effect: how long the server keeps the locks of a
    /// transaction whose client has gone silent (see
    /// [`Config::with_lease`]). On PostgreSQL the configured lease, which
    /// hierlock sets for each lock-taking transaction; on MySQL and MariaDB
    /// what the server applies to the pool's sessions (the shorter of
    /// `wait_timeout` and MariaDB's `idle_transaction_timeout`), read at
    /// connect on one of the pool's connections (set it on all of them with
    /// [`lease::mysql_pool`](crate::lease::mysql_pool)); `None` on SQLite
    /// and when nothing bounds it.
    pub fn lease(&self) -> Option<std::time::Duration> {
        self.inner.lease
    }

    /// The deployment found at connect (see [`Topology`]).
    pub fn topology(&self) -> Topology {
        self.inner.topology
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The detected server.
    pub fn dialect(&self) -> Dialect {
        self.inner.dialect
    }

    /// Whether two transactions with non-conflicting requests can hold their
    /// locks at once. False on SQLite, where every acquisition takes the one
    /// database-wide write lock.
    pub fn is_exact(&self) -> bool {
        self.inner.strategy != Strategy::SqliteWriteLock
    }

    /// Where this locker hashes nodes to.
    pub fn keyspace(&self) -> Keyspace {
        match self.inner.strategy {
            Strategy::Advisory { namespace } => Keyspace::Advisory { namespace },
            _ => Keyspace::Buckets {
                scheme: self.inner.config.key_scheme(),
                space: self.inner.config.bucket_space(),
            },
        }
    }

    /// The locks `requests` would take, in the order they would be taken.
    ///
    /// # Errors
    /// [`Error::EmptyId`] if a target has an empty ID.
    pub fn plan<'r>(&self, requests: impl IntoIterator<Item = &'r Request>) -> Result<LockPlan> {
        LockPlan::with_subtree_reads(requests, self.keyspace(), self.inner.config.subtree_reads())
    }

    /// Lock `requests` on `txn`, waiting as configured. The locks are held
    /// until `txn` commits or rolls back.
    ///
    /// All requests are taken in one global order (see [`LockPlan`]), so
    /// transactions that each take their locks in one call never deadlock
    /// with each other, whatever their requests and however IDs collide.
    ///
    /// # Errors
    /// - [`Error::EmptyId`] before any SQL runs.
    /// - [`Error::WouldBlock`], [`Error::LockTimeout`], [`Error::Deadlock`]:
    ///   a conflict; [`Error::txn_state`] says what it left in `txn`.
    /// - [`Error::NotProvisioned`]: a bucket row is missing.
    /// - [`Error::Misuse`]: `txn` is on another kind of database than this locker.
    /// - [`Error::Database`]: any other failure.
    pub async fn acquire<'t, R: Into<Request>>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: impl IntoIterator<Item = R>,
    ) -> Result<LockSet<'t>> {
        self.acquire_with(txn, requests, self.inner.config.wait())
            .await
    }

    /// [`Locker::acquire`], waiting as `wait` says.
    ///
    /// # Errors
    /// As [`Locker::acquire`], and [`Error::InvalidConfig`] for a zero timeout.
    pub async fn acquire_with<'t, R: Into<Request>>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: impl IntoIterator<Item = R>,
        wait: Wait,
    ) -> Result<LockSet<'t>> {
        let requests = requests.into_iter().map(Into::into).collect();
        let held = self.lock_on(txn, requests, wait, Leased::Yes).await?;
        Ok(LockSet { txn, held })
    }

    /// Plan and take `requests` on `conn`, which must be inside a transaction.
    pub(crate) async fn lock_on(
        &self,
        conn: &impl ConnectionTrait,
        requests: Vec<Request>,
        wait: Wait,
        leased: Leased,
    ) -> Result<Held> {
        let plan = self.plan(&requests)?;
        self.lock_planned(conn, requests, plan, wait, leased).await
    }

    /// The locks `requests` need on a transaction that holds `held` already
    /// (see [`LockPlan::within`]).
    pub(crate) fn plan_within(&self, requests: &[Request], held: &[PlannedLock]) -> Result<LockPlan> {
        LockPlan::within(
            requests,
            self.keyspace(),
            self.inner.config.subtree_reads(),
            held,
        )
    }

    /// [`Locker::acquire_with`] of `plan`, made for `requests` (by
    /// [`Locker::plan_within`]).
    pub(crate) async fn acquire_planned<'t>(
        &self,
        txn: &'t DatabaseTransaction,
        requests: Vec<Request>,
        plan: LockPlan,
        wait: Wait,
    ) -> Result<LockSet<'t>> {
        let held = self
            .lock_planned(txn, requests, plan, wait, Leased::Yes)
            .await?;
        Ok(LockSet { txn, held })
    }

    /// Take `plan`, made for `requests`, on `conn`.
    ///
    /// On MySQL, MariaDB and PostgreSQL a call with a deadline returns by it
    /// whatever the network does: a [`Wait::Timeout`] by its deadline plus
    /// [`DEADLINE_MARGIN`], a [`Wait::NoWait`] within the answer timeout.
    /// Past that, the connection is given up as lost (see [`Error::no_answer`]).
    async fn lock_planned(
        &self,
        conn: &impl ConnectionTrait,
        requests: Vec<Request>,
        plan: LockPlan,
        wait: Wait,
        leased: Leased,
    ) -> Result<Held> {
        let wait = wait.validate()?;
        if conn.get_database_backend() != self.inner.dialect.backend() {
            return Err(Error::Misuse(format!(
                "this locker is for {:?}, but the transaction is on {:?}",
                self.inner.dialect,
                conn.get_database_backend()
            )));
        }
        if plan.is_empty() {
            return Ok(Held {
                requests,
                plan,
                statements: 0,
            });
        }
        let span = tracing::debug_span!(
            "hierlock.acquire",
            locks = plan.locks().len(),
            ?wait,
            statements = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let started = Instant::now();
        let mut run = Run {
            conn,
            dialect: self.inner.dialect,
            wait,
            deadline: match wait {
                Wait::Timeout(d) => Some(started + d),
                _ => None,
            },
            requests: &requests,
            locks: plan.locks().len(),
            statements: 0,
            cancel: None,
            holds_prefix: false,
            lease: match (self.inner.strategy, leased) {
                // The one server whose lease hierlock sets per transaction.
                (Strategy::Advisory { .. }, Leased::Yes) => self.inner.config.lease(),
                (Strategy::BucketRows, Leased::Yes) if self.inner.dialect == Dialect::Postgres => {
                    self.inner.config.lease()
                }
                _ => None,
            },
        };
        // PostgreSQL aborts the whole transaction on a failed statement: run
        // attempts that are expected to fail inside a savepoint.
        let isolate = self.inner.dialect == Dialect::Postgres && wait != Wait::Block;
        let work = async {
            if !self.probes_first() {
                run.prepare_cancel(&self.inner.canceller).await?;
            }
            if isolate {
                run.exec(run.savepoint_statement("SAVEPOINT"), "opening a savepoint")
                    .await?;
            }
            let outcome = self.take(&mut run, &plan).await;
            if isolate {
                run.close_savepoint(outcome).await
            } else {
                outcome
            }
        }
        .instrument(span.clone());
        let outcome = match self.answer_bound(wait) {
            None => work.await,
            Some(within) => {
                let answered = tokio::time::timeout_at(started + within, work).await;
                match answered {
                    Ok(outcome) => outcome,
                    Err(_elapsed) => {
                        run.end_session();
                        Err(Error::no_answer(
                            format_args!("acquiring {}", run.what()),
                            within,
                            TxnState::Lost,
                        ))
                    }
                }
            }
        };
        let statements = run.statements;
        let took = started.elapsed();
        span.record("statements", statements);
        span.record("elapsed_ms", took.as_secs_f64() * 1000.0);
        let level = requests
            .iter()
            .map(|r| r.target.level())
            .max()
            .unwrap_or(crate::model::level::Level::User);
        telemetry::record(level, &outcome, took);
        match &outcome {
            Ok(()) => span.record("outcome", "locked"),
            Err(err) => span.record("outcome", tracing::field::debug(err.kind())),
        };
        outcome.map(|()| Held {
            requests,
            plan,
            statements,
        })
    }

    /// How long an acquisition waiting as `wait` may go on before its
    /// connection is given up: a deadline's own time and a margin to cancel
    /// the wait and read its answer; a no-wait's answer timeout; nothing for
    /// a blocking wait (the server's lock wait timeout ends it) and on
    /// SQLite (in-process: no network to lose).
    fn answer_bound(&self, wait: Wait) -> Option<std::time::Duration> {
        if self.inner.strategy == Strategy::SqliteWriteLock {
            return None;
        }
        match wait {
            Wait::Timeout(d) => Some(d + DEADLINE_MARGIN),
            Wait::NoWait => Some(self.inner.config.answer_timeout()),
            Wait::Block => None,
        }
    }

    async fn take(&self, run: &mut Run<'_, impl ConnectionTrait>, plan: &LockPlan) -> Result<()> {
        match self.inner.strategy {
            Strategy::BucketRows if self.probes_first() => {
                self.take_bucket_rows_probing(run, plan).await
            }
            Strategy::BucketRows => self.take_bucket_rows(run, plan).await,
            Strategy::Advisory { .. } => self.take_advisory_probing(run, plan).await,
            Strategy::SqliteWriteLock => self.take_sqlite_write_lock(run).await,
        }
    }

    /// SQLite's write lock. On a connection with hierlock's busy handler
    /// (see `hierlock::sqlite`) the lock statement names this acquisition's
    /// registered wait, which the handler follows and ends as soon as the
    /// registration is dropped (with this future, if it is dropped): no
    /// setting changes. Without the handler the statement fails to prepare
    /// (its SQL function is missing), and the wait is the connection's busy
    /// timeout, set for the attempt and restored after.
    async fn take_sqlite_write_lock(&self, run: &mut Run<'_, impl ConnectionTrait>) -> Result<()> {
        let table = self.inner.config.table();
        let limit = match (run.wait, run.deadline) {
            (Wait::NoWait, _) => Limit::Now,
            (_, Some(deadline)) => Limit::Until(deadline.into_std()),
            (_, None) => Limit::BusyTimeout,
        };
        let registration = Registration::new(limit);
        let stmt = run
            .dialect
            .sqlite_watched_write_lock_statement(table, registration.token());
        tracing::trace!(sql = %stmt.sql, "hierlock lock statement");
        match run.conn.query_all_raw(stmt).await {
            Ok(_) => {
                run.statements += 1;
                Ok(())
            }
            Err(e) if is_missing_lock_wait_function(&e) => {
                drop(registration);
                let restore = run.set_sqlite_busy_timeout().await?;
                let stmt = run.dialect.sqlite_write_lock_statement(table);
                let outcome = run.query(stmt, false).await.map(drop);
                run.restore_wait(restore, outcome).await
            }
            Err(e) => {
                run.statements += 1;
                Err(run.conflict(e, false))
            }
        }
    }

    /// Whether acquisitions that may wait first try without waiting, so that
    /// an uncontended acquisition is one round trip and the connection id
    /// that cancellation needs is read only when the plan must wait: on the
    /// MySQL family (one statement takes a whole plan, up to 100 runs of
    /// equal modes: see [`Dialect::split_bucket_plan`]) and
    /// with PostgreSQL's advisory locks (try-locks never abort the
    /// transaction; a failed `NOWAIT` on the bucket table would).
    fn probes_first(&self) -> bool {
        match self.inner.strategy {
            Strategy::BucketRows => self.inner.dialect.is_mysql_family(),
            Strategy::Advisory { .. } => true,
            Strategy::SqliteWriteLock => false,
        }
    }

    /// Try the plan with `NOWAIT`; if a row is taken, wait for it (the rows
    /// the attempt locked stay locked: a prefix of the plan, in order, which
    /// the waiting statements take again).
    async fn take_bucket_rows_probing(
        &self,
        run: &mut Run<'_, impl ConnectionTrait>,
        plan: &LockPlan,
    ) -> Result<()> {
        if run.wait == Wait::NoWait {
            return self.take_bucket_rows(run, plan).await;
        }
        let wait = std::mem::replace(&mut run.wait, Wait::NoWait);
        let probe = self.take_bucket_rows(run, plan).await;
        run.wait = wait;
        match probe {
            Err(err) if err.kind() == ErrorKind::WouldBlock => {
                run.holds_prefix = plan.locks().len() > 1;
                run.prepare_cancel(&self.inner.canceller).await?;
                self.take_bucket_rows(run, plan).await
            }
            other => other,
        }
    }

    /// Advisory locks: try the plan key by key without waiting (one
    /// statement, stopping at the first key taken); if a key is taken, read
    /// the connection id (for cancellation) and take the plan, waiting
    /// (PostgreSQL's advisory locks are reentrant: the prefix the attempt
    /// took is taken again, and released with the transaction).
    async fn take_advisory_probing(
        &self,
        run: &mut Run<'_, impl ConnectionTrait>,
        plan: &LockPlan,
    ) -> Result<()> {
        if run.wait != Wait::NoWait && plan.locks().len() <= MAX_PROBED_KEYS {
            let stmt = run.dialect.advisory_probe_statement(plan.locks(), run.lease);
            let rows = run.query(stmt, plan.locks().len() > 1).await?;
            let granted = rows
                .first()
                .and_then(|row| row.try_get::<i32>("", "granted").ok())
                == Some(1);
            if granted {
                return Ok(());
            }
            run.holds_prefix = plan.locks().len() > 1;
        }
        run.prepare_cancel(&self.inner.canceller).await?;
        take_advisory(run, plan).await
    }

    /// The plan's statements (see [`Dialect::split_bucket_plan`]), in key
    /// order: mixed modes in one statement on the MySQL family, one run of
    /// equal modes at a time on PostgreSQL.
    async fn take_bucket_rows(
        &self,
        run: &mut Run<'_, impl ConnectionTrait>,
        plan: &LockPlan,
    ) -> Result<()> {
        let statements = run.dialect.split_bucket_plan(plan.locks());
        for (i, locks) in statements.into_iter().enumerate() {
            let partial = run.holds_prefix || i > 0;
            let wait = run.statement_wait(partial)?;
            let stmt = run
                .dialect
                .bucket_lock_statement(self.inner.config.table(), locks, wait, run.lease);
            // Earlier statements, or earlier rows of this one, may hold locks.
            let partial = partial || locks.len() > 1;
            let rows = run.query(stmt, partial).await?;
            self.check_provisioned(locks, &rows, partial || !rows.is_empty())?;
        }
        Ok(())
    }

    /// Fail closed: every planned row must have been returned, hence locked.
    fn check_provisioned(
        &self,
        locks: &[PlannedLock],
        rows: &[QueryResult],
        partial: bool,
    ) -> Result<()> {
        if rows.len() == locks.len() {
            return Ok(());
        }
        let found: std::collections::HashSet<(i64, i64)> = rows
            .iter()
            .filter_map(|row| {
                Some((
                    row.try_get("", "locked_level").ok()?,
                    row.try_get("", "locked_bucket").ok()?,
                ))
            })
            .collect();
        let missing = locks
            .iter()
            .find(|lock| !found.contains(&(i64::from(lock.key.table_level()), lock.key.slot)))
            .unwrap_or(&locks[0]);
        let (key, bucket) = (missing.key, missing.key.slot);
        let (row, stripe) = match key.kind {
            KeyKind::Node => (u32::try_from(bucket).ok().map(|b| (key.level, b)), ""),
            KeyKind::Stripe => (None, " stripes"),
        };
        Err(Error::NotProvisioned {
            what: format!(
                "bucket row (level {} = {}{stripe}, bucket {bucket}) of `{}`",
                key.table_level(),
                key.level,
                self.inner.config.table()
            ),
            row,
            txn_state: if partial {
                TxnState::PartiallyLocked
            } else {
                TxnState::Unchanged
            },
        })
    }
}

/// The whole plan in one statement (split past
/// [`max_rows_per_statement`](Dialect::max_rows_per_statement) keys, in
/// order); with no-wait, try-locks that report.
async fn take_advisory(run: &mut Run<'_, impl ConnectionTrait>, plan: &LockPlan) -> Result<()> {
    let try_only = run.wait == Wait::NoWait;
    for (i, locks) in plan
        .locks()
        .chunks(run.dialect.max_rows_per_statement())
        .enumerate()
    {
        let stmt = run.dialect.advisory_lock_statement(locks, try_only, run.lease);
        let rows = run.query(stmt, i > 0 || locks.len() > 1).await?;
        if try_only && !all_granted(&rows, locks.len()) {
            return Err(Error::WouldBlock {
                what: run.what(),
                txn_state: TxnState::PartiallyLocked,
                source: None,
            });
        }
    }
    Ok(())
}

/// How to put a connection's lock wait back after an attempt.
enum Restore {
    Nothing,
    Statement(Statement),
}

/// A MySQL-family pool whose sessions keep a silent client's locks longer
/// than the configured lease is worth a warning (not an error: the locks
/// still exclude; only their release after a partition is slower).
fn warn_if_lease_longer(
    dialect: Dialect,
    found: Option<std::time::Duration>,
    wanted: Option<std::time::Duration>,
) {
    let Some(wanted) = wanted.filter(|_| dialect.is_mysql_family()) else {
        return;
    };
    if found.is_none_or(|found| found > wanted) {
        tracing::warn!(
            ?found,
            ?wanted,
            "hierlock: the pool's sessions keep a silent client's locks longer than the \
             configured lease; set it on the pool with hierlock::lease::mysql_pool"
        );
    }
}

/// One acquisition in progress on one connection.
struct Run<'c, C> {
    conn: &'c C,
    dialect: Dialect,
    wait: Wait,
    /// When a [`Wait::Timeout`] acquisition gives up, whatever it is doing.
    deadline: Option<Instant>,
    /// What was asked for: described only when an error needs it.
    requests: &'c [Request],
    /// How many locks the plan takes.
    locks: usize,
    statements: usize,
    /// The canceller and the server-side id of `conn`, for statements that
    /// may wait.
    cancel: Option<(Canceller, i64)>,
    /// A failed no-wait attempt may have left a prefix of the plan locked.
    holds_prefix: bool,
    /// The lease to set for the transaction in its lock statements
    /// (PostgreSQL; see [`Config::with_lease`]).
    lease: Option<std::time::Duration>,
}

/// Whether an acquisition's transaction gets the lease (see
/// [`Config::with_lease`]): not a [`LockHandle`](crate::LockHandle)'s, which
/// is idle by design while the work it protects runs elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leased {
    Yes,
    No,
}

impl<C: ConnectionTrait> Run<'_, C> {
    /// Run one lock statement; classify its failure. `partial` says whether
    /// locks of this acquisition may already be held when it fails.
    ///
    /// A statement that may wait is cancelled on the server if its future is
    /// dropped, and when the deadline passes.
    async fn query(&mut self, stmt: Statement, partial: bool) -> Result<Vec<QueryResult>> {
        self.statements += 1;
        tracing::trace!(sql = %stmt.sql, "hierlock lock statement");
        let guard: Option<CancelOnDrop> = self
            .cancel
            .as_ref()
            .map(|(canceller, id)| canceller.arm(*id));
        let statement = self.conn.query_all_raw(stmt);
        // Only a statement that can be cancelled is given up at the deadline
        // (SQLite's wait ends in its busy handler, or with its busy timeout,
        // set to the time left).
        let deadline = self.deadline.filter(|_| guard.is_some());
        let outcome = match deadline {
            None => statement.await,
            Some(deadline) => match tokio::time::timeout_at(deadline, statement).await {
                Ok(outcome) => outcome,
                Err(_elapsed) => {
                    if let Some(guard) = guard {
                        guard.cancel_now().await;
                    }
                    self.drain().await;
                    return Err(self.deadline_passed(true));
                }
            },
        };
        if let Some(guard) = guard {
            guard.disarm();
        }
        outcome.map_err(|e| self.conflict(e, partial))
    }

    /// End the connection if it still runs a lock statement: the acquisition
    /// was given up with its statement unanswered. In the background: the
    /// server is asked from the side connection, which a dead network may
    /// not reach either (the lease then ends the session).
    fn end_session(&self) {
        let Some((canceller, id)) = self.cancel.clone() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { canceller.cancel(id, End::Session).await });
        }
    }

    /// `write Resource(u1/a1/r1), read User(u2)`, for messages.
    fn what(&self) -> String {
        describe_requests(self.requests)
    }

    /// Read what the interrupted statement left on the connection (its
    /// error: MySQL 1317, PostgreSQL 57014), so that the transaction's next
    /// statement gets its own answer. Bounded: if the cancellation did not
    /// reach the server, the statement ends with the server's own timeout.
    async fn drain(&self) {
        let ping = Statement::from_string(self.dialect.backend(), "SELECT 1");
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, self.conn.execute_raw(ping)).await;
        if drained.is_err() {
            tracing::warn!(
                "hierlock: an interrupted lock statement did not end; its connection stays busy"
            );
        }
    }

    /// Learn the server-side id of the connection, so that a statement that
    /// waits can be cancelled: one round trip, for acquisitions that may wait
    /// on a server that can cancel.
    async fn prepare_cancel(&mut self, canceller: &Canceller) -> Result<()> {
        if self.wait == Wait::NoWait {
            return Ok(());
        }
        let Some(stmt) = canceller.connection_id_statement() else {
            return Ok(());
        };
        canceller.warm();
        let doing = || format!("acquiring {}", self.what());
        let row = self
            .conn
            .query_one_raw(stmt)
            .await
            .map_err(|e| Error::database(doing(), e))?;
        let id: i64 = row
            .map(|row| row.try_get("", "id"))
            .transpose()
            .map_err(|e| Error::database(doing(), e))?
            .unwrap_or_default();
        self.cancel = Some((canceller.clone(), id));
        Ok(())
    }

    /// The wait of the next lock statement: the time left before the
    /// deadline (the server's own limit where it has one per statement;
    /// hierlock cancels the statement at the deadline in any case).
    /// `partial`: earlier statements of this acquisition may hold locks.
    fn statement_wait(&self, partial: bool) -> Result<Wait> {
        let Some(deadline) = self.deadline.filter(|_| self.wait != Wait::NoWait) else {
            return Ok(self.wait);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.deadline_passed(partial));
        }
        Ok(Wait::Timeout(left))
    }

    /// The deadline of a [`Wait::Timeout`] passed. `partial`: locks of this
    /// acquisition may be held (on the MySQL family a statement interrupted
    /// at the deadline may have been granted just before).
    fn deadline_passed(&self, partial: bool) -> Error {
        let txn_state = match self.dialect {
            // The attempt runs in a savepoint, rolled back by `close_savepoint`.
            Dialect::Postgres => TxnState::Aborted,
            _ if partial => TxnState::PartiallyLocked,
            _ => TxnState::Unchanged,
        };
        Error::LockTimeout {
            what: self.what(),
            waited: match self.wait {
                Wait::Timeout(d) => Some(d),
                _ => None,
            },
            txn_state,
            source: None,
        }
    }

    /// Run a bookkeeping statement (timeouts, savepoints).
    async fn exec(&self, stmt: Statement, doing: &str) -> Result<()> {
        self.conn
            .execute_raw(stmt)
            .await
            .map(drop)
            .map_err(|e| Error::database(doing, e))
    }

    fn conflict(&self, err: DbErr, partial: bool) -> Error {
        let what = self.what();
        let family = self.dialect.is_mysql_family();
        let busy_state = match self.dialect {
            // Outside a savepoint, any error aborts a PostgreSQL transaction.
            Dialect::Postgres => TxnState::Aborted,
            _ if partial => TxnState::PartiallyLocked,
            _ => TxnState::Unchanged,
        };
        match classify(&err) {
            Some(Conflict::NoWait) => Error::WouldBlock {
                what,
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Busy) if self.wait == Wait::NoWait => Error::WouldBlock {
                what,
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Busy) => Error::LockTimeout {
                what,
                waited: match self.wait {
                    Wait::Timeout(d) => Some(d),
                    _ => None,
                },
                txn_state: busy_state,
                source: Some(err),
            },
            Some(Conflict::Deadlock) => Error::Deadlock {
                what,
                txn_state: if family {
                    TxnState::RolledBack
                } else {
                    TxnState::Aborted
                },
                source: err,
            },
            // The table was dropped (or never created on this schema) after
            // `Locker::connect` checked it.
            None if is_missing_table(&err) => Error::NotProvisioned {
                what: format!("the lock table for {what} ({err})"),
                row: None,
                txn_state: busy_state,
            },
            None => match lock_memory_full_hint(&err) {
                Some(hint) => Error::database_in(
                    format!("acquiring {} locks ({what}): {hint}", self.locks),
                    err,
                    busy_state,
                ),
                None => Error::database_in(format!("acquiring {what}"), err, busy_state),
            },
        }
    }

    /// On a SQLite connection without hierlock's busy handler, the lock wait
    /// is the connection's busy timeout: read it, then set it for the
    /// attempt. (Not on a connection with the handler: setting the busy
    /// timeout replaces any busy handler.)
    async fn set_sqlite_busy_timeout(&mut self) -> Result<Restore> {
        let millis = match self.statement_wait(false)? {
            Wait::Block => return Ok(Restore::Nothing),
            Wait::NoWait => 0,
            // SQLite takes an int: at most about 24.8 days.
            Wait::Timeout(d) => d.as_millis().clamp(1, i32::MAX as u128),
        };
        let read = self.dialect.sqlite_busy_timeout_statement(None);
        let saved: i64 = match self.conn.query_one_raw(read).await {
            Ok(Some(row)) => row
                .try_get_by_index(0)
                .map_err(|e| Error::database("reading the busy timeout", e))?,
            Ok(None) => 0,
            Err(e) => return Err(Error::database("reading the busy timeout", e)),
        };
        let set = self.dialect.sqlite_busy_timeout_statement(Some(millis));
        self.exec(set, "setting the busy timeout").await?;
        let saved = u128::try_from(saved).unwrap_or(0);
        Ok(Restore::Statement(
            self.dialect.sqlite_busy_timeout_statement(Some(saved)),
        ))
    }

    /// Undo [`Run::set_sqlite_busy_timeout`]; the lock failure, if any, is the error worth reporting.
    async fn restore_wait(&mut self, restore: Restore, outcome: Result<()>) -> Result<()> {
        let Restore::Statement(stmt) = restore else {
            return outcome;
        };
        let restored = self.exec(stmt, "restoring the lock wait timeout").await;
        if let Err(e) = &restored {
            tracing::warn!(error = %e, "hierlock could not restore the lock wait timeout");
        }
        outcome.and(restored)
    }

    fn savepoint_statement(&self, verb: &str) -> Statement {
        Statement::from_string(self.dialect.backend(), format!("{verb} {SAVEPOINT}"))
    }

    /// End the attempt's savepoint: keep its locks on success; on failure roll
    /// back to it, which also releases any lock the attempt took, so the
    /// transaction is left exactly as it was.
    async fn close_savepoint(&mut self, outcome: Result<()>) -> Result<()> {
        match outcome {
            Ok(()) => {
                self.exec(
                    self.savepoint_statement("RELEASE SAVEPOINT"),
                    "releasing the savepoint",
                )
                .await
            }
            Err(err) => {
                self.exec(
                    self.savepoint_statement("ROLLBACK TO SAVEPOINT"),
                    "rolling back to the savepoint",
                )
                .await?;
                self.exec(
                    self.savepoint_statement("RELEASE SAVEPOINT"),
                    "releasing the savepoint",
                )
                .await?;
                Err(err.with_txn_state(TxnState::Unchanged))
            }
        }
    }
}

/// Whether every column of the try-lock row is `true`.
fn all_granted(rows: &[QueryResult], columns: usize) -> bool {
    rows.first()
        .is_some_and(|row| (0..columns).all(|i| row.try_get_by_index::<bool>(i).unwrap_or(false)))
}

/// `write Resource(u1/a1/r1), read User(u2)`, shortened after a few.
fn describe_requests(requests: &[Request]) -> String {
    const SHOWN: usize = 4;
    let mut text: Vec<String> = requests
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if requests.len() > SHOWN {
        text.push(format!("and {} more", requests.len() - SHOWN));
    }
    text.join(", ")
}

/// What one acquisition took.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub(crate) requests: Vec<Request>,
    pub(crate) plan: LockPlan,
    pub(crate) statements: usize,
}

impl Held {
    pub(crate) fn covers(&self, target: &Target, access: Access) -> bool {
        self.requests.iter().any(|r| r.covers(target, access))
    }
}

/// Locks held on a caller's transaction; released when it commits or rolls back.
///
/// Dropping a `LockSet` releases nothing: the locks belong to the transaction.
#[derive(Debug)]
pub struct LockSet<'t> {
    txn: &'t DatabaseTransaction,
    held: Held,
}

impl<'t> LockSet<'t> {
    /// The transaction holding the locks.
    pub fn txn(&self) -> &'t DatabaseTransaction {
        self.txn
    }

    /// What was asked for.
    pub fn requests(&self) -> &[Request] {
        &self.held.requests
    }

    /// The locks taken, in the order they were taken.
    pub fn plan(&self) -> &LockPlan {
        &self.held.plan
    }

    /// How many lock statements were sent to the server (without the
    /// bookkeeping ones for timeouts and savepoints).
    pub fn statements(&self) -> usize {
        self.held.statements
    }

    /// Whether these locks protect `access` on `target` (a write covers its
    /// subtree; a read covers reads of its own node).
    pub fn covers(&self, target: &Target, access: Access) -> bool {
        self.held.covers(target, access)
    }
}
