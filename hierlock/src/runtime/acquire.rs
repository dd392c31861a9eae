//! Taking a plan's locks on a transaction: [`Locker`] and [`LockSet`].

use std::sync::Arc;

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DatabaseTransaction, QueryResult, TransactionTrait,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::backend::bucket_rows;
use crate::backend::cancel::{Canceller, MySqlServer};
use crate::backend::dialect::{Dialect, server_version};
use crate::backend::postgres::advisory;
use crate::backend::row_read::RowRead;
use crate::backend::run::Run;
use crate::backend::sqlite::lock as sqlite_lock;
use crate::backend::topology::{self, Topology};
use crate::config::{Config, DEADLINE_MARGIN, PostgresLocks, Wait};
use crate::error::{Error, Result, TxnState};
use crate::lease;
use crate::model::plan::{Keyspace, LockPlan, PlannedLock};
use crate::model::target::{Access, Request, Target};
use crate::runtime::telemetry;
use crate::schema;

/// What [`Locker::connect`] found.
struct Checked {
    dialect: Dialect,
    strategy: Strategy,
    topology: Topology,
    lease: Option<std::time::Duration>,
    /// What the canceller needs of a MySQL-family server.
    server: MySqlServer,
}

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
    /// - [`Error::ConnectionLost`]: the checks got no answer within the
    ///   configured [answer timeout](Config::with_answer_timeout) (a silent
    ///   network); their connection is abandoned.
    /// - [`Error::Database`]: the server could not be asked.
    pub async fn connect(db: &DatabaseConnection, config: Config) -> Result<Locker> {
        // A silent network never answers: the checks end by the answer
        // timeout, their connection abandoned.
        let checked = Error::answered_within(
            "checking the server for a locker",
            config.answer_timeout(),
            Self::check(db, &config),
        )
        .await?;
        let Checked {
            dialect,
            strategy,
            topology,
            lease,
            server,
        } = checked?;
        tracing::debug!(?dialect, ?strategy, table = %config.table(), ?lease, "hierlock locker ready");
        let canceller = Canceller::new(db, server);
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

    /// [`Locker::connect`]'s checks, in one transaction.
    async fn check(db: &DatabaseConnection, config: &Config) -> Result<Checked> {
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
        let topology = topology::check(&txn, dialect, version.as_deref(), config).await?;
        let lease = match strategy {
            Strategy::SqliteWriteLock => None,
            _ if dialect.is_mysql_family() => lease::session_lease(&txn, dialect).await?,
            _ => config.lease(),
        };
        warn_if_lease_longer(dialect, lease, config.lease());
        match strategy {
            Strategy::BucketRows => schema::verify(&txn, dialect, config).await?,
            Strategy::SqliteWriteLock => schema::ensure_sqlite(&txn, config).await?,
            Strategy::Advisory { .. } => {}
        }
        let get_lock = match topology {
            Topology::GaleraSingleWriter { .. } => takes_get_lock(&txn, dialect).await?,
            _ => true,
        };
        txn.commit()
            .await
            .map_err(|e| Error::database("ending the locker's checks", e))?;
        let server = MySqlServer {
            mariadb: dialect == Dialect::MariaDb,
            get_lock,
        };
        Ok(Checked {
            dialect,
            strategy,
            topology,
            lease,
            server,
        })
    }

    /// The lease in effect: how long the server keeps the locks of a
    /// transaction whose client has gone silent (see
    /// [`Config::with_lease`]). On PostgreSQL the configured lease, which
    /// hierlock sets for each lock-taking transaction; on MySQL and MariaDB
    /// what the server applies to the pool's sessions (the shorter of
    /// `wait_timeout` and MariaDB's `idle_transaction_timeout`), read at
    /// connect on one of the pool's connections (set it on all of them with
    /// [`lease::mysql_pool`]); `None` on SQLite
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
        let (held, _) = self
            .lock_planned(conn, requests, plan, wait, leased, None)
            .await?;
        Ok(held)
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
        let (held, _) = self
            .lock_planned(txn, requests, plan, wait, Leased::Yes, None)
            .await?;
        Ok(LockSet { txn, held })
    }

    /// Take `plan`, made for `requests`, on `conn`; with a `read`, also
    /// read its rows in the plan's last lock statement (see `row_read`;
    /// only where [`Locker::reads_in_lock_statement`]) and return them.
    ///
    /// On MySQL, MariaDB and PostgreSQL a call with a deadline returns by it
    /// whatever the network does: a [`Wait::Timeout`] by its deadline plus
    /// [`DEADLINE_MARGIN`], a [`Wait::NoWait`] within the answer timeout.
    /// Past that, the connection is given up as lost (see [`Error::no_answer`]).
    pub(crate) async fn lock_planned(
        &self,
        conn: &impl ConnectionTrait,
        requests: Vec<Request>,
        plan: LockPlan,
        wait: Wait,
        leased: Leased,
        read: Option<RowRead>,
    ) -> Result<(Held, Vec<QueryResult>)> {
        let wait = wait.validate()?;
        if conn.get_database_backend() != self.inner.dialect.backend() {
            return Err(Error::Misuse(format!(
                "this locker is for {:?}, but the transaction is on {:?}",
                self.inner.dialect,
                conn.get_database_backend()
            )));
        }
        if plan.is_empty() {
            let held = Held {
                requests,
                plan,
                statements: 0,
            };
            return Ok((held, Vec::new()));
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
        let deadline = match wait {
            Wait::Timeout(d) => Some(started + d),
            _ => None,
        };
        // PostgreSQL is the one server whose lease hierlock sets, per
        // transaction, in its lock statements.
        let lease = match leased {
            Leased::Yes if self.inner.dialect == Dialect::Postgres => self.inner.config.lease(),
            _ => None,
        };
        let (dialect, locks) = (self.inner.dialect, plan.locks().len());
        let mut run = Run::new(conn, dialect, wait, deadline, &requests, locks, lease);
        run.read = read;
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
                    // Dropping the work ended the session of a lock
                    // statement in flight (its guard), so that the server
                    // frees the locks now rather than at the lease.
                    Err(_elapsed) => {
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
        let rows = std::mem::take(&mut run.read_rows);
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
        outcome.map(|()| {
            let held = Held {
                requests,
                plan,
                statements,
            };
            (held, rows)
        })
    }

    /// Whether [`Locker::acquire_reading`] reads in the lock statement
    /// (see `row_read`): on the bucket table of the MySQL family.
    pub(crate) fn reads_in_lock_statement(&self) -> bool {
        self.inner.strategy == Strategy::BucketRows
            && self.inner.dialect.reads_in_lock_statement()
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

    /// Take `plan` the way the server's locks are taken: each backend owns
    /// its statements and how it waits.
    async fn take(&self, run: &mut Run<'_, impl ConnectionTrait>, plan: &LockPlan) -> Result<()> {
        let (table, canceller) = (self.inner.config.table(), &self.inner.canceller);
        match self.inner.strategy {
            Strategy::BucketRows => bucket_rows::take_probing(run, plan, table, canceller).await,
            Strategy::Advisory { .. } => advisory::take_probing(run, plan, canceller).await,
            Strategy::SqliteWriteLock => sqlite_lock::take_write_lock(run, table).await,
        }
    }

    /// Whether acquisitions that may wait first try without waiting, so that
    /// an uncontended acquisition is one round trip and the connection id
    /// that cancellation needs is read only when the plan must wait: on the
    /// bucket table (one statement takes a whole plan, up to 100 runs of
    /// equal modes: see [`Dialect::split_bucket_plan`]; PostgreSQL tries
    /// with `SKIP LOCKED`, as a failed `NOWAIT` would abort the transaction)
    /// and with PostgreSQL's advisory locks (try-locks).
    fn probes_first(&self) -> bool {
        match self.inner.strategy {
            Strategy::BucketRows | Strategy::Advisory { .. } => true,
            Strategy::SqliteWriteLock => false,
        }
    }
}

/// Whether a Galera node takes `GET_LOCK`, which cancellation fences use:
/// some MariaDB releases refuse it with wsrep on (1235, "GET_LOCK in
/// cluster"), later ones take it.
async fn takes_get_lock(txn: &DatabaseTransaction, dialect: Dialect) -> Result<bool> {
    let probe = sea_orm::Statement::from_string(
        dialect.backend(),
        "DO RELEASE_LOCK('hierlock_fence_probe')",
    );
    match txn.execute_raw(probe).await {
        Ok(_) => Ok(true),
        Err(err) if crate::backend::classify::is_not_supported(&err) => Ok(false),
        Err(err) => Err(Error::database("checking whether the server takes GET_LOCK", err)),
    }
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

/// Whether an acquisition's transaction gets the lease (see
/// [`Config::with_lease`]): not a [`LockHandle`](crate::LockHandle)'s, which
/// is idle by design while the work it protects runs elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leased {
    Yes,
    No,
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
    pub(crate) fn new(txn: &'t DatabaseTransaction, held: Held) -> Self {
        LockSet { txn, held }
    }

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
